from ansible_collections.jetson.specdec.plugins.module_utils.bench.sse import SSEParser

STREAM = (b'data: {"choices":[{"text":"a"}]}\n\n'
          b': keep-alive\n\n'
          b'data: {"choices":[{"text":"b"}]}\n\n'
          b'data: {"choices":[],"usage":{"completion_tokens":2}}\n\n'
          b'data: [DONE]\n\n')
EXPECTED = ['{"choices":[{"text":"a"}]}', '{"choices":[{"text":"b"}]}',
            '{"choices":[],"usage":{"completion_tokens":2}}', "[DONE]"]


def _feed_all(blocks):
    p = SSEParser()
    out = []
    for b in blocks:
        out.extend(p.feed(b))
    return out + p.close()


def test_whole_stream():
    assert _feed_all([STREAM]) == EXPECTED


def test_every_split_point_gives_same_events():
    for i in range(len(STREAM) + 1):
        assert _feed_all([STREAM[:i], STREAM[i:]]) == EXPECTED, i


def test_byte_by_byte_and_crlf():
    crlf = STREAM.replace(b"\n", b"\r\n")
    assert _feed_all([crlf[i:i + 1] for i in range(len(crlf))]) == EXPECTED
    cr = STREAM.replace(b"\n", b"\r")
    assert _feed_all([cr]) == EXPECTED


def test_comments_and_keepalives_yield_nothing():
    p = SSEParser()
    assert p.feed(b": ping\n\n:\n\n\n\n") == []
    assert p.close() == []


def test_multiline_data_and_other_fields():
    p = SSEParser()
    assert p.feed(b"event: x\nid: 3\ndata: line1\ndata:line2\nretry: 5\n\n") == ["line1\nline2"]


def test_done_and_usage_only_chunks_pass_through():
    p = SSEParser()
    assert p.feed(b'data: {"choices":[],"usage":{"completion_tokens":7}}\n\ndata: [DONE]\n\n') == [
        '{"choices":[],"usage":{"completion_tokens":7}}', "[DONE]"]


def test_missing_final_blank_line_flushed_on_close():
    p = SSEParser()
    assert p.feed(b"data: [DONE]") == []
    assert p.close() == ["[DONE]"]


def test_utf8_split_across_blocks():
    payload = 'data: {"text":"\u00e9\u4e2d"}\n\n'.encode("utf-8")
    cut = payload.index(b"\xc3") + 1
    assert _feed_all([payload[:cut], payload[cut:]]) == ['{"text":"\u00e9\u4e2d"}']
