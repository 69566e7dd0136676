"""Reproducibility signatures, in the spirit of sacrebleu: ``key:value|key:value|...``.

Two scores are comparable when their signatures are equal; every score that leaves the library carries one.
"""
from __future__ import annotations

import functools
from importlib import metadata

import chimdqa_eval


@functools.cache  # each call reads and parses the distribution's METADATA file; an evaluation asks a dozen times
def package_version(name: str) -> str:
    """Installed version of a distribution, or 'none' when it is not installed (as this process first saw it)."""
    if name == "chimdqa_eval":
        return chimdqa_eval.__version__
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "none"


def make_signature(fields: dict, packages=()) -> str:
    """Render fields (in the given order) then ``<package>:<version>`` for each package, '|'-separated."""
    items = [(k, v) for k, v in fields.items()]
    items += [(p, package_version(p)) for p in ("chimdqa_eval", *packages)]
    for k, v in items:
        if "|" in str(k) or "|" in str(v):
            raise ValueError(f"signature field {k}={v!r} may not contain '|'")
    return "|".join(f"{k}:{v}" for k, v in items)


def parse_signature(signature: str) -> dict:
    """Inverse of make_signature: the fields as a dict of strings."""
    out = {}
    for part in signature.split("|"):
        key, _, value = part.partition(":")
        out[key] = value
    return out
