"""Read-only string tables that the rule judge looks up in place, and the cache files that hold them
(dictionary.py: CC-CEDICT's names; names.py: pypinyin's readings).

A table is a hash index of uint32 record offsets (crc32 of the UTF-8 key, linear probing) before the records, each
<key bytes, value bytes> with their lengths. A file of tables is mapped into memory, not read: opening one costs a
checksum over the file and no objects; a lookup costs a few microseconds and brings into memory only the pages it
reads, so the resident set grows with what a run asks, not with the size of the tables.
"""
from __future__ import annotations

import hashlib
import mmap
import os
import struct
import sys
import unicodedata
import zlib
from array import array
from pathlib import Path

import numpy as np

from chimdqa_eval.cache import cache_dir
from chimdqa_eval.jsonio import write_atomic

SEPARATOR = "\x1f"  # between the values of a set
_CHUNK = 1 << 20


class Table:
    """A read-only table over one buffer: str -> frozenset[str] (get, [], in, len, iteration, items), and str ->
    the value as stored (`text`: a str stored as it was given, a set's values sorted and joined by SEPARATOR)."""

    _HEAD = struct.Struct("<II")  # key length, value length

    def __init__(self, buffer: memoryview, slots: memoryview, length: int, raw: memoryview | None = None):
        self._buffer, self._slots, self._mask, self._length = buffer, slots, len(slots) - 1, length
        self._raw = raw  # the table's whole encoding: equal bytes, equal tables

    @classmethod
    def encode(cls, table: dict) -> bytes:
        """slot count, key count and records' size (uint32 each), the slots (uint32, 0 = empty, else offset + 1
        into the records), the records. A value is a str (stored as it is) or a set of str."""
        size = 1 << max(3, (2 * len(table)).bit_length())  # a load factor under 1/2
        slots = array("I", bytes(4 * size))
        records = bytearray()
        for key, values in table.items():
            key_bytes = key.encode("utf-8", "surrogatepass")
            value = values if isinstance(values, str) else SEPARATOR.join(sorted(values))
            value_bytes = value.encode("utf-8", "surrogatepass")
            slot = zlib.crc32(key_bytes) & (size - 1)
            while slots[slot]:
                slot = (slot + 1) & (size - 1)
            slots[slot] = len(records) + 1
            records += cls._HEAD.pack(len(key_bytes), len(value_bytes)) + key_bytes + value_bytes
        return struct.pack("<III", size, len(table), len(records)) + slots.tobytes() + bytes(records)

    @classmethod
    def decode(cls, buffer: memoryview) -> tuple["Table", int]:
        """The table at the start of `buffer`, and how many bytes it takes."""
        size, length, end = struct.unpack_from("<III", buffer)
        if not size or size & (size - 1) or length >= size or 12 + 4 * size + end > len(buffer):
            raise ValueError("not a table, or a truncated one")
        slots = buffer[12:12 + 4 * size].cast("I")
        # A lookup must end at an empty slot and every record start inside the records (checked with numpy: a
        # Python loop over a million slots would double the time to the first grade).
        offsets = np.frombuffer(slots, dtype=np.uint32)
        if offsets.all() or offsets.max() > max(0, end - cls._HEAD.size + 1):
            raise ValueError("not a table: no empty slot, or a record outside the table")
        used = 12 + 4 * size + end
        return cls(buffer[12 + 4 * size:used], slots, length, buffer[:used]), used

    def _find(self, key: str):
        """(start, length) of the key's value bytes, or None."""
        if not isinstance(key, str):
            return None
        key_bytes = key.encode("utf-8", "surrogatepass")
        slot = zlib.crc32(key_bytes) & self._mask
        buffer = self._buffer
        while offset := self._slots[slot]:
            start = offset - 1 + 8
            key_length, value_length = self._HEAD.unpack_from(buffer, offset - 1)
            if buffer[start:start + key_length] == key_bytes:
                return start + key_length, value_length
            slot = (slot + 1) & self._mask
        return None

    def text(self, key, default=None):
        """The value as stored, or default."""
        found = self._find(key)
        if found is None:
            return default
        start, length = found
        return str(self._buffer[start:start + length], "utf-8", "surrogatepass")

    def get(self, key, default=None):
        found = self.text(key)
        return default if found is None else frozenset(found.split(SEPARATOR))

    def __getitem__(self, key) -> frozenset[str]:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def __contains__(self, key) -> bool:
        return self._find(key) is not None

    def __len__(self) -> int:
        return self._length

    def __iter__(self):
        for offset in self._slots:
            if offset:
                key_length, _ = self._HEAD.unpack_from(self._buffer, offset - 1)
                yield str(self._buffer[offset - 1 + 8:offset - 1 + 8 + key_length], "utf-8", "surrogatepass")

    def items(self):
        return ((key, self[key]) for key in self)

    def __eq__(self, other) -> bool:
        if isinstance(other, Table):
            if self._raw is not None and other._raw is not None and self._raw == other._raw:
                return True  # the same encoding
            return len(self) == len(other) and all(other.get(key) == value for key, value in self.items())
        if isinstance(other, dict):
            return len(self) == len(other) and all(other.get(key) == value for key, value in self.items())
        return NotImplemented

    __hash__ = None


def encode_tables(magic: bytes, tables) -> bytes:
    """The magic line, the crc32 of the rest (uint32), the tables (dicts; a Table as it is encoded already)."""
    payload = b"".join(bytes(table._raw) if isinstance(table, Table) and table._raw is not None
                       else Table.encode(table) for table in tables)
    return magic + struct.pack("<I", zlib.crc32(payload)) + payload


def _checked(magic: bytes, head: bytes, crc: int) -> int:
    if not head.startswith(magic) or len(head) < len(magic) + 4:
        raise ValueError("not a tables file")
    if crc != struct.unpack_from("<I", head, len(magic))[0]:
        raise ValueError("a damaged tables file")
    return len(magic) + 4


def _split(buffer: memoryview, count: int) -> tuple[Table, ...]:
    tables = []
    for _ in range(count):
        table, used = Table.decode(buffer)
        tables.append(table)
        buffer = buffer[used:]
    if len(buffer):
        raise ValueError("trailing bytes")
    return tuple(tables)


def decode_tables(magic: bytes, data: bytes, count: int) -> tuple[Table, ...]:
    """The `count` tables of encode_tables's bytes; ValueError for anything else (a damaged or foreign file)."""
    head = len(magic) + 4
    if not data.startswith(magic) or len(data) < head:
        raise ValueError("not a tables file")
    return _split(memoryview(data)[_checked(magic, data[:head], zlib.crc32(memoryview(data)[head:])):], count)


def map_tables(path: Path, magic: bytes, count: int) -> tuple[Table, ...]:
    """The tables of a file written by encode_tables, mapped into memory after its checksum is verified (the file
    is read once in chunks for that, nothing of it kept); OSError or ValueError when it is missing or damaged."""
    with open(path, "rb") as f:
        head = f.read(len(magic) + 4)
        if not head.startswith(magic) or len(head) < len(magic) + 4:
            raise ValueError("not a tables file")
        crc = 0
        while chunk := f.read(_CHUNK):
            crc = zlib.crc32(chunk, crc)
        start = _checked(magic, head, crc)
        if os.fstat(f.fileno()).st_size <= start:
            raise ValueError("no tables in the file")
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    return _split(memoryview(mapped)[start:], count)


def cached_tables(path: Path | None, magic: bytes, count: int, build) -> tuple[Table, ...]:
    """The tables saved at `path` when they are whole, else `build()`'s (a sequence of dicts), saved there for the
    next process (whole or not at all, if two build at once; a read-only cache only costs the build). None: no
    cache folder, built every time."""
    if path is not None:
        try:
            return map_tables(path, magic, count)
        except (OSError, ValueError, TypeError, struct.error):
            pass
    data = encode_tables(magic, build())
    if path is not None:
        try:
            write_atomic(path, data)
        except OSError:
            pass
    return decode_tables(magic, data, count)


def cache_file(folder: str, stem: str, *builders: str) -> Path | None:
    """Where cached_tables keeps tables built by the code in the modules at paths `builders` (the building module
    first, then those whose functions it calls): cache_dir(folder) / "<stem>-<source>-<byte order>.tables",
    `source` hashing those modules, this one and the Unicode database's version (what `\\w` and NFKD mean), so
    tables built by other code or another Python's Unicode are never read; None when there is no cache folder."""
    source = hashlib.sha256()
    for module in (*builders, __file__):
        source.update(Path(module).read_bytes())
    source.update(unicodedata.unidata_version.encode())
    try:
        return cache_dir(folder) / f"{stem}-{source.hexdigest()[:12]}-{sys.byteorder}.tables"
    except OSError:  # no cache folder to be had (cache_dir says why)
        return None
