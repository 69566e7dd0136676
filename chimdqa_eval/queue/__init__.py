"""The leaderboard's submission queue: participants drop validated predictions into a queue folder, a
maintainer's processor re-scores every request with one pinned set of settings and rebuilds the board.

    board_config.py   leaderboard.yaml: the benchmark selection and the pinned scoring settings
    store.py          the queue folder: request files, their status (PENDING -> RUNNING -> FINISHED / FAILED),
                      the lock that keeps two processors off one request, stale-request recovery
    sync.py           the same folders mirrored to Hugging Face Hub dataset repos (or any folder)
    command.py        `chimdqa queue submit | process | status`
"""
