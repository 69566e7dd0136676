"""Hugging Face Space for the chimdqa_rag metric: a Gradio widget around the module next to this file."""
import sys
from pathlib import Path

import evaluate
from evaluate.utils import launch_gradio_widget

HERE = Path(__file__).resolve().parent
# An exported Space (chimdqa export-hub --spaces) carries the toolkit in chimdqa_eval/ next to this file.
sys.path.insert(0, str(HERE))
# Load by file path so the Space (and a checkout) runs the module it ships, whatever its repo is called.
module = evaluate.load(str(HERE / "chimdqa_rag.py"))

if __name__ == "__main__":
    launch_gradio_widget(module)
