"""Everything that goes to the Hugging Face Hub, written as local folders and files to upload.

dataset.py   `chimdqa export-hub OUT`: the script-free Hub dataset folder (parquet + card with `configs:`)
spaces.py    the evaluate metric modules as self-contained Spaces (`export-hub --spaces`), ``load_metric``,
             and the card of the leaderboard's static Space
exports.py   `chimdqa export`: a results directory as a model card's model-index or a `.eval_results/` file
"""
