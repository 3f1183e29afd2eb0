"""MongoDB's wire protocol, as much as a readiness probe needs: one OP_MSG command and its reply.

Any server that speaks MongoDB's protocol (FerretDB, MongoDB itself since 3.6) answers a command
sent as an OP_MSG: a 16-byte header (length, request id, the id answered, opcode 2013), flag bits,
and a body section holding one BSON document with the command and its ``$db``. The reply is an
OP_MSG whose body is a document with ``ok: 1`` on success.

BSON is encoded for the types a command needs (string, int32/int64, double, bool, document) and
decoded for those plus what replies carry (arrays, binary, UTC datetimes, timestamps, null,
ObjectIds); anything else is an error, never a silent guess.
"""

from __future__ import annotations

import itertools
import socket
import struct
from collections.abc import Mapping

from layerbench.errors import LayerbenchError
from layerbench.proc import Runner

OP_MSG = 2013
HEADER = struct.Struct("<iiii")  # messageLength, requestID, responseTo, opCode
FLAGS = struct.Struct("<I")
CHECKSUM_PRESENT, MORE_TO_COME = 1 << 0, 1 << 1
MAX_MESSAGE = 48_000_000  # MongoDB's maxMessageSizeBytes: a longer "length" is not a MongoDB reply
_INT32, _INT64, _DOUBLE = struct.Struct("<i"), struct.Struct("<q"), struct.Struct("<d")
_ids = itertools.count(1)


class MongoWireError(LayerbenchError):
    """Bytes that are not the MongoDB wire protocol (or BSON) we can read."""


# --- BSON ----------------------------------------------------------------------------------------------


def encode(doc: Mapping[str, object]) -> bytes:
    """One BSON document, keys in the mapping's order (a command's name must come first)."""
    body = b"".join(_element(key, value) for key, value in doc.items())
    return _INT32.pack(len(body) + 5) + body + b"\x00"


def _cstring(text: str) -> bytes:
    raw = text.encode()
    if b"\x00" in raw:
        raise MongoWireError(f"a BSON key cannot hold a NUL byte: {text!r}")
    return raw + b"\x00"


def _element(key: str, value: object) -> bytes:
    name = _cstring(key)
    if isinstance(value, bool):  # before int: bool is an int in Python
        return b"\x08" + name + (b"\x01" if value else b"\x00")
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return b"\x10" + name + _INT32.pack(value)
        return b"\x12" + name + _INT64.pack(value)
    if isinstance(value, float):
        return b"\x01" + name + _DOUBLE.pack(value)
    if isinstance(value, str):
        raw = value.encode()
        return b"\x02" + name + _INT32.pack(len(raw) + 1) + raw + b"\x00"
    if isinstance(value, Mapping):
        return b"\x03" + name + encode(value)
    raise MongoWireError(f"cannot encode {key!r}: {type(value).__name__} is not a BSON type this module writes")


def decode(data: bytes) -> dict[str, object]:
    """One BSON document that fills ``data`` exactly."""
    doc, end = _document(data, 0, len(data))
    if end != len(data):
        raise MongoWireError(f"{len(data) - end} bytes after the BSON document")
    return doc


def _document(data: bytes, at: int, limit: int) -> tuple[dict[str, object], int]:
    """The document at ``at``, which must end by ``limit`` (its container's end); and where it ends."""
    size = _read(_INT32, data, at)
    end = at + size
    if size < 5 or end > limit or data[end - 1] != 0:
        raise MongoWireError(f"a BSON document of {size} bytes at offset {at} does not fit in {limit}")
    out: dict[str, object] = {}
    at += 4
    while at < end - 1:
        kind = data[at]
        key, at = _read_cstring(data, at + 1, end)
        out[key], at = _value(kind, key, data, at, end)
    if at != end - 1:
        raise MongoWireError(f"a BSON document's elements overrun its length at offset {at}")
    return out, end


def _value(kind: int, key: str, data: bytes, at: int, end: int) -> tuple[object, int]:
    fixed = _FIXED.get(kind)
    if fixed is not None:
        if at + fixed > end:
            raise MongoWireError(f"BSON value {key!r} (type 0x{kind:02x}) does not fit")
        raw = data[at : at + fixed]
        if kind == 0x08 and raw not in (b"\x00", b"\x01"):
            raise MongoWireError(f"BSON bool {key!r} is {raw[0]}, not 0 or 1")
        return _FIXED_VALUE[kind](raw), at + fixed
    if kind == 0x02:  # string: its length (with the NUL), UTF-8, NUL
        size = _read(_INT32, data, at)
        stop = at + 4 + size
        if size < 1 or stop > end or data[stop - 1] != 0:
            raise MongoWireError(f"BSON string {key!r} of {size} bytes does not fit")
        return data[at + 4 : stop - 1].decode(errors="replace"), stop
    if kind == 0x05:  # binary: its length, a subtype byte, the bytes
        size = _read(_INT32, data, at)
        stop = at + 5 + size
        if size < 0 or stop > end:
            raise MongoWireError(f"BSON binary {key!r} of {size} bytes does not fit")
        return data[at + 5 : stop], stop
    if kind in (0x03, 0x04):
        sub, stop = _document(data, at, end)
        return (list(sub.values()) if kind == 0x04 else sub), stop
    raise MongoWireError(f"BSON type 0x{kind:02x} of {key!r} is not one this module reads")


# Types of a fixed size, and what each becomes: double; ObjectId (hex); bool; UTC datetime (ms since
# the epoch), timestamp and int64 (ints); null; int32.
_FIXED = {0x01: 8, 0x07: 12, 0x08: 1, 0x09: 8, 0x0A: 0, 0x10: 4, 0x11: 8, 0x12: 8}
_FIXED_VALUE = {
    0x01: lambda raw: _DOUBLE.unpack(raw)[0],
    0x07: bytes.hex,
    0x08: lambda raw: raw == b"\x01",
    0x09: lambda raw: _INT64.unpack(raw)[0],
    0x0A: lambda raw: None,
    0x10: lambda raw: _INT32.unpack(raw)[0],
    0x11: lambda raw: _INT64.unpack(raw)[0],
    0x12: lambda raw: _INT64.unpack(raw)[0],
}


def _read(fmt: struct.Struct, data: bytes, at: int) -> int | float:
    if at + fmt.size > len(data):
        raise MongoWireError(f"truncated BSON: {fmt.size} bytes wanted at offset {at} of {len(data)}")
    return fmt.unpack_from(data, at)[0]  # type: ignore[no-any-return]


def _read_cstring(data: bytes, at: int, end: int) -> tuple[str, int]:
    stop = data.find(b"\x00", at, end)
    if stop < 0:
        raise MongoWireError(f"an unterminated BSON key at offset {at}")
    return data[at:stop].decode(errors="replace"), stop + 1


# --- OP_MSG ----------------------------------------------------------------------------------------


def op_msg(command: Mapping[str, object], request_id: int) -> bytes:
    """A command as one OP_MSG with a single body section (the command names its ``$db``)."""
    body = FLAGS.pack(0) + b"\x00" + encode(command)
    return HEADER.pack(HEADER.size + len(body), request_id, 0, OP_MSG) + body


def reply_body(message: bytes, request_id: int | None = None) -> dict[str, object]:
    """The body document of an OP_MSG reply (header included); ``request_id``: the request it must answer."""
    if len(message) < HEADER.size + FLAGS.size:
        raise MongoWireError(f"a reply of {len(message)} bytes is shorter than an OP_MSG header")
    length, _, response_to, opcode = HEADER.unpack_from(message)
    if opcode != OP_MSG:
        raise MongoWireError(f"reply opcode {opcode}, not OP_MSG ({OP_MSG})")
    if length != len(message):
        raise MongoWireError(f"the reply says {length} bytes, {len(message)} were given")
    if request_id is not None and response_to != request_id:
        raise MongoWireError(f"the reply answers request {response_to}, not {request_id}")
    (flags,) = FLAGS.unpack_from(message, HEADER.size)
    end = length - 4 if flags & CHECKSUM_PRESENT else length  # a CRC-32C we do not verify
    at, body = HEADER.size + FLAGS.size, None
    while at < end:
        kind, at = message[at], at + 1
        if kind == 0:
            body, at = _document(message, at, end)
        elif kind == 1:  # a document sequence: its size counts itself
            at += _read(_INT32, message, at)  # type: ignore[assignment]
        else:
            raise MongoWireError(f"OP_MSG section kind {kind} is unknown")
    if body is None:
        raise MongoWireError("the OP_MSG reply has no body section")
    return body


def command(host: str, port: int, doc: Mapping[str, object], timeout: float = 1.0) -> dict[str, object]:
    """Send one command (with its ``$db``) and return the reply's body; OSError when the socket fails."""
    request_id = next(_ids) & 0x7FFFFFFF
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(op_msg(doc, request_id))
        head = _receive(s, HEADER.size)
        length = HEADER.unpack(head)[0]
        if not HEADER.size < length <= MAX_MESSAGE:
            raise MongoWireError(f"a reply length of {length} bytes: not the MongoDB wire protocol")
        return reply_body(head + _receive(s, length - HEADER.size), request_id)


def _receive(s: socket.socket, size: int) -> bytes:
    data = s.recv(size, socket.MSG_WAITALL)
    if len(data) < size:
        raise MongoWireError(f"the connection closed after {len(data)} of {size} bytes")
    return data


def ok(reply: Mapping[str, object]) -> bool:
    """MongoDB's ``ok`` is a double (1.0) from mongod, an int or a bool elsewhere: any true 1 is success."""
    value = reply.get("ok")
    return not isinstance(value, str) and value == 1


def ready(host: str, port: int, runner: Runner, password: str = "") -> bool:
    """Does it serve MongoDB's protocol: an ``isMaster`` command answered ``ok: 1`` within a second
    (FerretDB on SQLite has no authentication: ``password`` is unused).

    ``isMaster`` rather than its newer name ``hello`` (MongoDB 4.4.2): every server that speaks
    OP_MSG (MongoDB 3.6 and later, FerretDB) answers it. An open port alone is not enough.
    """
    try:
        return ok(command(host, port, {"isMaster": 1, "$db": "admin"}, timeout=1.0))
    except (OSError, MongoWireError):
        return False
