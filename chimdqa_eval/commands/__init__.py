"""The `chimdqa` subcommands, one module per command and named as it (``judge_audit`` is ``judge-audit``).

Each module parses its flags into the library's typed settings, calls the library and prints; it exposes
``add_arguments(parser)`` and ``run(args) -> int``. Nothing below this package imports it."""
