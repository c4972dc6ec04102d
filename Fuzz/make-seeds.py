#!/usr/bin/env python3
"""Writes the seed corpora under Fixtures/fuzz/<target>/ (run from anywhere; overwrites the seeds but
keeps the `crash-*` inputs, the regression tests).

Each seed is a small valid or nearly valid input that reaches one branch of the code under test; the
fuzzer mutates from there. Targets whose first input byte is a configuration byte (response-head,
chunked) get seeds with the generous limits and, for a few, the tightest ones.
"""
import os
import shutil

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "Fixtures", "fuzz")

# response-head: bits 0-2 head limit index (6 = 64 KiB), bits 3-4 header count index (3 = 256).
HEAD_LOOSE = b"\x1e"
HEAD_TIGHT = b"\x09"  # 16-byte heads, 2 headers
# chunked: bits 0-1 size-line limit index (3 = 4096), bits 2-3 trailer limit index (3 = 64 KiB).
CHUNK_LOOSE = b"\x0f"
CHUNK_TIGHT = b"\x01"  # 8-byte size lines, no trailers

SEEDS = {
    "response-head": {
        "200-length": HEAD_LOOSE + b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nETag: \"abc\"\r\n\r\nhello",
        "206-range": HEAD_LOOSE + b"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-9/100\r\n"
        b"Content-Length: 10\r\nAccept-Ranges: bytes\r\n\r\n0123456789",
        "chunked": HEAD_LOOSE + b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n"
        b"Content-Length: 7\r\n\r\n",
        "bare-lf": HEAD_LOOSE + b"HTTP/1.1 404 Not Found\nConnection: close\nContent-Length: 0\n\n",
        "interim-then-final": HEAD_LOOSE + b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"
        b"Content-Length: 0\r\n\r\n",
        "http10-keep-alive": HEAD_LOOSE + b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n"
        b"Content-Length: 1, 1\r\n\r\n",
        "pipelined": HEAD_LOOSE + b"HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 304 Not Modified\r\n"
        b"ETag: W/\"x\"\r\n\r\n",
        "obs-fold": HEAD_LOOSE + b"HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\n\r\n",
        "conflicting-length": HEAD_LOOSE + b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
        "http2": HEAD_LOOSE + b"HTTP/2 200\r\n\r\n",
        "no-reason": HEAD_LOOSE + b"HTTP/1.1 503\r\nRetry-After: 1\r\n\r\n",
        "obs-text": HEAD_LOOSE + b"HTTP/1.1 200 \xe9t\xe9\r\nX-Latin: caf\xe9\r\nX-Utf8: caf\xc3\xa9\r\n\r\n",
        "tight-limits": HEAD_TIGHT + b"HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n",
        "garbage": HEAD_LOOSE + b"SSH-2.0-OpenSSH_9.2\r\n",
    },
    "chunked": {
        "simple": CHUNK_LOOSE + b"5\r\nhello\r\n0\r\n\r\n",
        "extensions": CHUNK_LOOSE + b"5;name=value;x\r\nhello\r\n6 ; q=\"a\"\r\n world\r\n0\r\n\r\n",
        "trailers": CHUNK_LOOSE + b"3\r\nabc\r\n0\r\nDigest: sha-256=x\r\nX-B: 2\r\n\r\n",
        "bare-lf": CHUNK_LOOSE + b"A\nabcdefghij\n0\n\n",
        "uppercase-hex": CHUNK_LOOSE + b"1F\r\n" + b"x" * 31 + b"\r\n0\r\n\r\n",
        "next-response": CHUNK_LOOSE + b"2\r\nhi\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
        "overflow": CHUNK_LOOSE + b"8000000000000000\r\n",
        "max-size": CHUNK_LOOSE + b"7fffffffffffffff\r\nabc",
        "bad-terminator": CHUNK_LOOSE + b"2\r\nhiX\r\n0\r\n\r\n",
        "tight-limits": CHUNK_TIGHT + b"0000000005\r\nhello\r\n0\r\nX: y\r\n\r\n",
    },
    "content-range": {
        "first-byte": b"bytes 0-0/1",
        "middle": b"bytes 500-999/1234",
        "unsatisfied": b"bytes */1234",
        "unknown-length": b"bytes 5-9/*",
        "uppercase": b"BYTES 1-2/3",
        "largest": b"bytes 9223372036854775806-9223372036854775806/9223372036854775807",
        "overflow": b"bytes 0-1/9223372036854775808",
        "reversed": b"bytes 9-5/10",
        "star-star": b"bytes */*",
        "spaces": b"bytes  0-1/2",
    },
    "checksum-file": {
        "gnu-text": b"d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592  x.iso\n"
        b"9e107d9d372bb6826bd81d3542a419d6  other.bin\n",
        "gnu-binary-crlf": b"\xef\xbb\xbf2fd4e1c67a2d28fced849ee1bb76e7391b93eb12 *dist/x.iso\r\n# comment\r\n",
        "bsd-tag": b"SHA256 (x.iso) = d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592\n"
        b"MD5 (x.iso) = 9e107d9d372bb6826bd81d3542a419d6\n",
        "openssl": b"SHA2-256(x.iso)= d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592\n",
        "escaped": b"\\d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592  a\\nb\\\\c.iso\n",
        "bare": b"9e107d9d372bb6826bd81d3542a419d6\n",
        "stdin": b"9e107d9d372bb6826bd81d3542a419d6  -\n",
        "contradiction": b"9e107d9d372bb6826bd81d3542a419d6  x.iso\n"
        b"00000000000000000000000000000000  x.iso\n",
        "sha512": b"07e547d9586f6a73f73fbac0435ed76951218fb7d0c8d788a309d785436bbb642e93a252a954f23912547d"
        b"1e8a3b5ed6e1bfd7097821233fa0538f3db854fee6\tx.iso\n",
        "pgp": b"-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\n"
        b"d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592 *x.iso\n"
        b"-----BEGIN PGP SIGNATURE-----\niQIzBAEBCAAdFiEE\n-----END PGP SIGNATURE-----\n",
    },
}

SHA = "d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592"


def journal(parts, size, **changes):
    """A version-2 journal as Swift's JSONEncoder writes it (pretty, sorted keys), sealed with the
    checksum of its encoding without the checksum field, as Journal.encoded() does."""
    import hashlib
    import json

    fields = {
        "bootID": "0f6d5a9c-1111-4222-8333-944455556666",
        "checksums": ["sha256=" + SHA],
        "etag": '"gen-4096-1"',
        "finalURL": "http://127.0.0.1:8080/gen/4096",
        "format": "fastpull-journal",
        "lastModified": "Mon, 01 Jan 2024 00:00:00 GMT",
        "segments": [
            {"durable": durable, "end": end, "start": start, "written": written}
            for start, end, durable, written in parts
        ],
        "size": size,
        "tool": "fastpull/0.1.0",
        "url": "http://127.0.0.1:8080/redirect/1/gen/4096",
        "version": 2,
    }
    fields.update(changes)

    def encode(value):
        return json.dumps(value, indent=2, sort_keys=True, separators=(",", " : "), ensure_ascii=False)

    fields["checksum"] = hashlib.sha256(encode(fields).encode()).hexdigest()
    return encode(fields).encode()


SEEDS["journal"] = {
    "two-segments": journal([(0, 2048, 1024, 2048), (2048, 4096, 0, 100)], 4096),
    "one-segment": journal([(0, 1, 0, 1)], 1),
    "minimal": b'{"format":"fastpull-journal","version":2,"url":"u","finalURL":"u","size":3,"checksums":[],'
    b'"segments":[{"start":0,"end":3,"durable":0,"written":0}]}',
    "gap": journal([(0, 10, 0, 0), (11, 20, 0, 0)], 20),
    "edited": journal([(0, 2048, 1024, 2048), (2048, 4096, 0, 100)], 4096).replace(b'"written" : 100', b'"written" : 2048'),
    "version-1": b'{"format":"fastpull-journal","version":1}',
    "huge-size": journal([(0, 9223372036854775807, 0, 9223372036854775807)], 9223372036854775807),
}

# content-disposition: RFC 6266 section 5 and RFC 8187 examples, then hostile names.
SEEDS["content-disposition"] = {
    "rfc6266-token": b"Attachment; filename=example.html",
    "rfc6266-quoted": b'INLINE; FILENAME= "an example.html"',
    "rfc6266-extended": b"attachment; filename*= UTF-8''%e2%82%ac%20rates",
    "rfc6266-both": b"attachment; filename=\"EURO rates\"; filename*=utf-8''%e2%82%ac%20rates",
    "rfc8187-latin1": b"attachment; filename*=iso-8859-1'en'%A3%20rates",
    "rfc8187-utf8": b"attachment; filename*=UTF-8''%c2%a3%20and%20%e2%82%ac%20rates.txt",
    "form-data": b'form-data; name="file"; filename="report.pdf"; '
    b'creation-date="Wed, 12 Feb 1997 16:29:51 -0500"; size=123',
    "duplicates": b"attachment; filename=a.txt; FILENAME=b.txt; filename*=UTF-8''c.txt; "
    b"filename*=UTF-8''d.txt",
    "quoted-escapes": b'attachment; filename="a \\"quoted\\" name\\\\.txt; not a param"; size=12',
    "unclosed-quote": b'attachment; filename="unclosed.txt',
    "bad-percent": b"attachment; filename*=UTF-8''bad%ZZ%4; filename=fallback.bin",
    "unknown-charset": b"attachment; filename*=koi8-r'ru'%F0%D2%C9; filename=\"caf\xc3\xa9.txt\"",
    "traversal": b'attachment; filename="../../etc/passwd"',
    "traversal-encoded": b"attachment; filename*=UTF-8''..%2F..%2F.ssh%2Fauthorized_keys",
    "backslashes": b'attachment; filename="..\\\\..\\\\windows\\\\system32\\\\drivers\\\\etc\\\\hosts"',
    "controls": b"attachment; filename*=UTF-8''a%00b%0D%0Ac%1B%5B31m%7F%C2%85.txt",
    "bidi-override": b"attachment; filename*=UTF-8''invoice%E2%80%AEfdp.exe",
    "dots-and-spaces": b'attachment; filename="  ...  .hidden  "',
    "only-dots": b'attachment; filename=".."; filename*=UTF-8\'\'%2E',
    "combining-marks": b"attachment; filename*=UTF-8''e%CC%81%CC%81%CC%81%CC%81.txt",
    "long-name": b'attachment; filename="' + "\u00e9".encode() * 300 + b'.tar.gz"',
    "empty": b'attachment; filename=""',
    "no-type": b"filename=x.bin",
}

# batch-file: `URL [OUTPUT] [ALGO=VALUE]...` a line; the last few are errors.
SHA256 = "d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592"
SEEDS["batch-file"] = {
    "one-url": b"https://example.org/x.iso\n",
    "commented": (
        "# the release and its notes\n\nhttps://example.org/x.iso  x.iso  sha256=%s\n"
        "  # indented comment\nhttps://example.org/NOTES.txt\n" % SHA256
    ).encode(),
    "crlf": (
        "# artifacts\r\n\r\nhttps://h.test/a.iso\r\n  http://h.test/b\tb.bin  SHA-256=%s\r\n" % SHA256
    ).encode(),
    "all-algorithms": (
        "http://h/f out/f.bin sha256=%s md5=9e107d9d372bb6826bd81d3542a419d6 "
        "sha1=2fd4e1c67a2d28fced849ee1bb76e7391b93eb12 crc32c=e3069283\n"
        "http://h/g md5=1B2M2Y8AsgTpgAmY7PhCfg== crc32c=4waSgw== sha512=%s\n" % (SHA256, "ab" * 64)
    ).encode(),
    "quoted-paths": b'http://h/c "out dir/c \\"q\\".bin"\nhttp://h/d ""x y"" \nhttp://h/e "tab\there"\n',
    "equals-path": b"http://h/x a=b.bin\nhttp://h/y blake3=abc\n",
    "odd-urls": "http://[::1]:8080/x?q=1#frag\nhttps://user:pa%20ss@h.test/%E2%82%AC.bin\n"
    "HTTP://H.TEST/\u00e9t\u00e9 \u00e9t\u00e9.bin\n".encode(),
    "bom-and-cr": b"\xef\xbb\xbfhttp://h/a\nhttp://h/b b\r\r\nhttp://h/c c\rd\n\n\n",
    "no-final-newline": b"http://h/a a.bin",
    "unclosed-quote": b'http://h/a "a.bin\n',
    "two-outputs": b"http://h/a a.bin b.bin\n",
    "bad-checksum": b"http://h/a sha256=abc\n",
    "bad-scheme": b"ftp://h/a\n",
    "no-host": b"http:///a\n",
    "empty-output": b'http://h/a ""\n',
}


def clear(folder):
    """Empties `folder` (creating it) but for the inputs a fuzzer crashed on, `crash-*`: those are
    regression tests (see Tests/FastpullTests/FuzzRegressionTests.swift)."""
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(folder):
        if not name.startswith("crash-"):
            os.remove(os.path.join(folder, name))


def main():
    for target, seeds in SEEDS.items():
        folder = os.path.join(OUT, target)
        clear(folder)
        for name, data in seeds.items():
            with open(os.path.join(folder, name), "wb") as handle:
                handle.write(data)
    # digest-headers: the recorded response heads are the seeds.
    folder = os.path.join(OUT, "digest-headers")
    clear(folder)
    recorded = os.path.join(ROOT, "Fixtures", "digest-headers")
    for name in sorted(os.listdir(recorded)):
        if name.endswith(".txt"):
            shutil.copy(os.path.join(recorded, name), os.path.join(folder, name[:-4]))
    extra = {
        "structured-params": b"HTTP/1.1 200 OK\nRepr-Digest: sha-256=:AAAA:;a=1;b=?0, x=(1 2.5 \"s\" tok :YQ==:);p, "
        b"y=@1700000000, *k=-12.345\n",
        "controls": b"HTTP/1.1 206 Partial Content\n\x00sha-256=:16j7swfXgJRpypq8sAguT41WUeRtPNt2LQLQvzfJ5ZI=:\n"
        b"\x03ImIEBA==\n\x0c\"d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592\"\n",
    }
    for name, data in extra.items():
        with open(os.path.join(folder, name), "wb") as handle:
            handle.write(data)


if __name__ == "__main__":
    main()
