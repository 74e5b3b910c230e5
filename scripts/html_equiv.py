#!/usr/bin/env python3
"""Whether two HTML pages are the same page: exit 0 when they are, 1 (with the first difference)
when not.

Usage: html_equiv.py A.html B.html

Both pages are tokenised with html.parser: start tags (attributes in order, values with their
entities decoded), end tags, text with its entities decoded (`&#39;` and `'` are one character),
declarations and comments. Text between two tags that is only whitespace with a line break in it
is left out outside `<pre>` (it lays out the source, not the page); any other text is compared as
it is, whitespace included (a space between two inline tags is shown). What stays is compared
token by token.
"""
import sys
from html.parser import HTMLParser


class Tokens(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tokens = []
        self.text = []
        self.pre = 0

    def flush(self):
        text = "".join(self.text)
        self.text = []
        if text and (self.pre or text.strip() or "\n" not in text):
            self.tokens.append(("text", text))

    def handle_starttag(self, tag, attrs):
        self.flush()
        if tag == "pre":
            self.pre += 1
        self.tokens.append(("start", tag, tuple(attrs)))

    def handle_startendtag(self, tag, attrs):
        self.flush()
        self.tokens.append(("start", tag, tuple(attrs)))

    def handle_endtag(self, tag):
        self.flush()
        if tag == "pre":
            self.pre = max(0, self.pre - 1)
        self.tokens.append(("end", tag))

    def handle_data(self, data):
        self.text.append(data)

    def handle_decl(self, decl):
        self.flush()
        self.tokens.append(("decl", decl.lower()))

    def handle_comment(self, data):
        self.flush()
        self.tokens.append(("comment", data))

    def handle_pi(self, data):
        self.flush()
        self.tokens.append(("pi", data))


def tokens(path):
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        p = Tokens()
        p.feed(f.read())
        p.close()
        p.flush()
        return p.tokens


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    a, b = tokens(sys.argv[1]), tokens(sys.argv[2])
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            print(f"token {i}: {x!r:.300}\n      vs {y!r:.300}")
            return 1
    if len(a) != len(b):
        print(f"{len(a)} tokens vs {len(b)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
