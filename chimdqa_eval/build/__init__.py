"""`chimdqa build`: make a release the way the paper made ChiMDQA (§2.3-2.4) — QA generation from PDFs, automated
screening, a human review round trip — with every stage reading and writing files in one work folder
(chimdqa_eval.build.work), resumable and recorded in WORK/manifest.json."""
