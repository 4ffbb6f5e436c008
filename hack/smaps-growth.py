#!/usr/bin/env python3
"""Which mappings of a process the RSS grew in between two copies of /proc/PID/smaps
(the memory benchmark's VERSA_BENCH_SMAPS readings): prints, per kind of mapping (the heap,
anonymous mappings, thread stacks, each file), the Rss and Anonymous KiB of each reading and
the growth. Usage: hack/smaps-growth.py BEFORE.smaps AFTER.smaps"""
import re
import sys


def read(path):
    kinds = {}
    kind = None
    for line in open(path):
        head = re.match(r"^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$", line)
        if head:
            name = head.group(3).strip()
            size = (int(head.group(2), 16) - int(head.group(1), 16)) // 1024
            if not name:
                # The allocator's large reservations are big anonymous mappings; the small ones
                # are its extents, guard pages, thread stacks without a name, and the rest.
                name = "[anon >= 64 MiB]" if size >= 65536 else "[anon < 64 MiB]"
            kind = kinds.setdefault(name, {"Rss": 0, "Anonymous": 0, "mappings": 0})
            kind["mappings"] += 1
            continue
        field = re.match(r"^(Rss|Anonymous):\s+(\d+) kB", line)
        if field and kind is not None:
            kind[field.group(1)] += int(field.group(2))
    return kinds


before, after = read(sys.argv[1]), read(sys.argv[2])
rows = []
for name in sorted(set(before) | set(after)):
    b = before.get(name, {"Rss": 0, "Anonymous": 0, "mappings": 0})
    a = after.get(name, {"Rss": 0, "Anonymous": 0, "mappings": 0})
    rows.append((a["Rss"] - b["Rss"], name, b, a))
print(f"{'growth KiB':>11} {'Rss before':>11} {'Rss after':>10} {'anon after':>10} {'maps':>5}  mapping")
for growth, name, b, a in sorted(rows, reverse=True):
    if b["Rss"] or a["Rss"]:
        print(f"{growth:>11} {b['Rss']:>11} {a['Rss']:>10} {a['Anonymous']:>10} {a['mappings']:>5}  {name}")
