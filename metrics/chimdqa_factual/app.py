"""Hugging Face Space for the chimdqa_factual metric: a Gradio widget around the module next to this file."""
from pathlib import Path

import evaluate
from evaluate.utils import launch_gradio_widget

# Load by file path so the Space (and a checkout) runs the module it ships, whatever its repo is called.
module = evaluate.load(str(Path(__file__).resolve().with_name("chimdqa_factual.py")))

if __name__ == "__main__":
    launch_gradio_widget(module)
