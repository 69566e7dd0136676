"""`chimdqa export-hub OUT`: a script-free Hugging Face Hub dataset folder (and, with --spaces, the metric Spaces)."""
from __future__ import annotations

from chimdqa_eval.hub.dataset import export_hub
from chimdqa_eval.hub.spaces import write_spaces


def add_arguments(parser) -> None:
    parser.add_argument("out", metavar="OUT", help="folder to write (created if missing)")
    parser.add_argument("--data-dir", metavar="DIR", help="release folder (default: the bundled sample release)")
    parser.add_argument("--spaces", "--metric-spaces", dest="spaces", metavar="DIR",
                        help="also write the three metric modules as self-contained evaluate Space folders into DIR")


def run(args) -> int:
    out = export_hub(args.out, args.data_dir)
    print(f"wrote {out} (upload with: hf upload <org>/chimdqa {out} --repo-type dataset)")
    if args.spaces:
        for folder in write_spaces(args.spaces):
            print(f"wrote {folder} (upload with: hf upload <org>/{folder.name} {folder} --repo-type space)")
    return 0
