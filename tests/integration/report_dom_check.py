#!/usr/bin/env python3
"""report_dom_check.py: checks the DOM a real browser made of a trainwatch report.html.

Reads the serialized DOM (`chromium --headless --dump-dom file://.../report.html`) on stdin.
Checks that the verdict names CAUSE, that there is one timeline lane per rank ("rank 0" ..
"rank N-1"), that exactly the lane of SUSPECT is highlighted, and that SUSPECT is listed among
the suspects. Prints "ok" and exits 0, or prints each difference and exits 1.

usage: report_dom_check.py CAUSE RANKS SUSPECT < dom.html
"""
import sys
from html.parser import HTMLParser


class Report(HTMLParser):
    def __init__(self):
        super().__init__()
        self.answer = ""
        self.in_answer = 0
        self.lanes = []  # (label, suspect)
        self.suspects = []
        self.in_suspect = 0
        self.depth = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if attrs.get("id") == "answer":
            self.in_answer = 1
        elif self.in_answer:
            self.in_answer += 1
        if tag == "g" and "lane" in classes:
            self.lanes.append((attrs.get("data-label", ""), "suspect" in classes))
        if tag == "li" and "suspect" in classes:
            self.in_suspect = 1
            self.suspects.append("")
        elif self.in_suspect:
            self.in_suspect += 1

    def handle_endtag(self, tag):
        if self.in_answer:
            self.in_answer -= 1
        if self.in_suspect:
            self.in_suspect -= 1

    def handle_data(self, data):
        if self.in_answer:
            self.answer += data
        if self.in_suspect:
            self.suspects[-1] += data


def main():
    cause, ranks, suspect = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    report = Report()
    report.feed(sys.stdin.read())
    problems = []
    if f"Cause: {cause}" not in report.answer:
        problems.append(f"the verdict says {report.answer!r}, not cause {cause}")
    rank_lanes = sorted(label for label, _ in report.lanes if label.startswith("rank "))
    if rank_lanes != sorted(f"rank {n}" for n in range(ranks)):
        problems.append(f"rank lanes {rank_lanes}, not one per rank of {ranks}")
    highlighted = [label for label, is_suspect in report.lanes if is_suspect]
    if highlighted != [suspect]:
        problems.append(f"highlighted lanes {highlighted}, not [{suspect!r}]")
    if not any(text.startswith(suspect + " ") for text in report.suspects):
        problems.append(f"suspects listed {report.suspects}, without {suspect!r}")
    for problem in problems:
        print(problem)
    if not problems:
        print("ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
