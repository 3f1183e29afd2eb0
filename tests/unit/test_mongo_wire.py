"""MongoDB's wire protocol (OP_MSG and BSON) on messages captured from FerretDB 1.24.2 (tests/data/mongo)."""

from __future__ import annotations

import socket
import struct
import threading
from functools import partial
from pathlib import Path

import pytest

from layerbench import proc
from layerbench.spec.databases import ServerSpec
from layerbench.workloads.servers import image, mongo_wire

DATA = Path(__file__).parent.parent / "data" / "mongo" / "ferretdb-1.24.2"
REQUEST_IDS = {"ismaster": 7, "hello": 8, "no-such-command": 9, "count": 11, "find-one": 12}


def raw(name: str) -> bytes:
    return (DATA / name).read_bytes()


def test_encode_matches_the_bson_specification_s_own_example() -> None:
    # bsonspec.org's first example, {"hello": "world"}, byte for byte.
    assert mongo_wire.encode({"hello": "world"}) == b"\x16\x00\x00\x00\x02hello\x00\x06\x00\x00\x00world\x00\x00"


def test_every_type_written_reads_back_the_same() -> None:
    doc = {"s": "é", "i": -5, "big": 2**40, "d": 0.5, "t": True, "f": False, "sub": {"n": 1, "e": {}}}
    assert mongo_wire.decode(mongo_wire.encode(doc)) == doc


@pytest.mark.parametrize("name", sorted(REQUEST_IDS))
def test_the_requests_sent_are_what_op_msg_makes(name: str) -> None:
    request = raw(f"{name}.request.bin")
    length, request_id, response_to, opcode = struct.unpack_from("<iiii", request)
    assert (length, request_id, response_to, opcode) == (len(request), REQUEST_IDS[name], 0, 2013)
    command = mongo_wire.decode(request[21:])  # header, flag bits, section kind 0
    assert mongo_wire.op_msg(command, request_id) == request


def test_is_master_reply_says_ok_with_a_datetime_and_sizes() -> None:
    reply = mongo_wire.reply_body(raw("ismaster.reply.bin"), request_id=7)
    assert reply["ismaster"] is True and reply["ok"] == 1.0 and mongo_wire.ok(reply)
    assert reply["maxBsonObjectSize"] == 16 * 2**20 and reply["maxWireVersion"] == 21
    assert isinstance(reply["localTime"], int) and reply["localTime"] > 1.7e12  # ms since the epoch
    assert mongo_wire.reply_body(raw("hello.reply.bin"), request_id=8)["isWritablePrimary"] is True


def test_an_unknown_command_is_answered_not_ok_with_its_reason() -> None:
    reply = mongo_wire.reply_body(raw("no-such-command.reply.bin"), request_id=9)
    assert not mongo_wire.ok(reply)
    assert (reply["code"], reply["codeName"]) == (59, "CommandNotFound")
    assert "layerbenchNoSuchCommand" in str(reply["errmsg"])


def test_count_and_a_found_record_with_its_binary_fields() -> None:
    assert mongo_wire.reply_body(raw("count.reply.bin"), request_id=11) == {"n": 1005, "ok": 1.0}
    cursor = mongo_wire.reply_body(raw("find-one.reply.bin"), request_id=12)["cursor"]
    assert isinstance(cursor, dict) and cursor["id"] == 0 and cursor["ns"] == "ycsb.usertable"
    (record,) = cursor["firstBatch"]
    assert record["_id"] == "user6284781860667377211"
    fields = {k: v for k, v in record.items() if k != "_id"}
    assert sorted(fields) == [f"field{i}" for i in range(10)]
    assert all(isinstance(v, bytes) and len(v) == 100 for v in fields.values())


def test_a_reply_to_another_request_or_cut_short_is_refused() -> None:
    reply = raw("ismaster.reply.bin")
    with pytest.raises(mongo_wire.MongoWireError, match="answers request 7, not 8"):
        mongo_wire.reply_body(reply, request_id=8)
    with pytest.raises(mongo_wire.MongoWireError, match="says 242 bytes"):
        mongo_wire.reply_body(reply[:-1])
    broken = bytearray(reply)
    broken[21:25] = struct.pack("<i", 10_000)  # the body document claims more than the message holds
    with pytest.raises(mongo_wire.MongoWireError, match="does not fit"):
        mongo_wire.reply_body(bytes(broken))


def test_types_it_does_not_read_are_an_error_not_a_guess() -> None:
    regex = b"\x0bre\x00a\x00i\x00"  # a regular expression element
    doc = struct.pack("<i", 4 + len(regex) + 1) + regex + b"\x00"
    with pytest.raises(mongo_wire.MongoWireError, match="0x0b"):
        mongo_wire.decode(doc)
    with pytest.raises(mongo_wire.MongoWireError, match="list"):
        mongo_wire.encode({"a": [1]})


def test_ready_says_yes_to_ok_and_no_to_not_ok_junk_and_a_closed_port() -> None:
    for reply, expected in (
        (raw("ismaster.reply.bin"), True),
        (raw("no-such-command.reply.bin"), False),  # ok: 0
        (b"HTTP/1.1 400 Bad Request\r\n\r\n", False),  # something else listens there
    ):
        with socket.create_server(("127.0.0.1", 0)) as listener:
            port = listener.getsockname()[1]
            thread = threading.Thread(target=_answer, args=(listener, reply))
            thread.start()
            assert mongo_wire.ready("127.0.0.1", port, proc.run) is expected
            thread.join(5)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
    assert mongo_wire.ready("127.0.0.1", port, proc.run) is False  # nothing listens now


def test_ready_gives_up_after_its_timeout_on_a_server_that_never_answers() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:  # accepts (the kernel does), never replies
        assert mongo_wire.ready("127.0.0.1", listener.getsockname()[1], proc.run) is False


def _answer(listener: socket.socket, reply: bytes) -> None:
    """Answer one request with ``reply``, as the answer to that request if it is an OP_MSG."""
    conn, _ = listener.accept()
    with conn:
        head = conn.recv(16, socket.MSG_WAITALL)
        conn.recv(struct.unpack_from("<i", head)[0] - 16, socket.MSG_WAITALL)
        if reply[12:16] == struct.pack("<i", mongo_wire.OP_MSG):
            reply = reply[:8] + head[4:8] + reply[12:]
        conn.sendall(reply)


def test_a_mongodb_image_server_waits_for_the_same_probe() -> None:
    mongo = ServerSpec.model_validate({"image": "mongo:7", "port": 27017, "client": "ycsb-mongodb"})
    definition = image.definition(mongo)
    assert isinstance(definition.ready, partial) and definition.ready.args == (mongo_wire.ready,)
    assert not definition.authenticates  # its authentication is the image's: its client gets no password
