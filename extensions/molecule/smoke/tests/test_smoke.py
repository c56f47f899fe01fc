def test_hello(host):
    assert host.file("/tmp/hello").content_string == "hello\n"
