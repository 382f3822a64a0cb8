#!/usr/bin/python3
"""Compares two junit XML reports of llama.cpp's server tests (direct, through the door) and prints
a table per test file, the totals, every test whose outcome differs (with the door's first error
line), and the tests deselected because their model is not in the models folder.

    compare.py DIRECT.xml [DOOR.xml]"""
import collections
import sys
import xml.etree.ElementTree as ET

ABSENT = "conformance: model absent:"


def outcomes(path):
    """{test id: (outcome, message)}; outcome is passed, failed, skipped or absent."""
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        test = f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name')}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome, message = "failed", child.get("message") or (child.text or "")
            elif child.tag == "skipped":
                message = child.get("message") or ""
                outcome = "absent" if ABSENT in message else "skipped"
        out[test] = (outcome, message.strip())
    return out


def first_line(message):
    lines = [x for x in message.splitlines() if x.strip()]
    return (lines[0] if lines else "")[:200]


def main(argv):
    direct = outcomes(argv[1])
    door = outcomes(argv[2]) if len(argv) > 2 else {}
    absent = {t: m for t, (o, m) in direct.items() if o == "absent"}
    absent.update({t: m for t, (o, m) in door.items() if o == "absent"})
    selected = sorted(t for t in direct.keys() | door.keys() if t not in absent)
    rows = collections.OrderedDict()
    for test in selected:
        f = test.split("::")[0].rsplit("/", 1)[-1]
        r = rows.setdefault(f, collections.Counter())
        d, g = direct.get(test, ("not run", ""))[0], door.get(test, ("not run", ""))[0]
        r["selected"] += 1
        r["direct"] += d == "passed"
        r["door"] += g == "passed"
        r["direct only"] += d == "passed" and g != "passed"
        r["door only"] += g == "passed" and d != "passed"
    cols = ["selected", "direct", "door", "direct only", "door only"] if door else ["selected", "direct"]
    width = max([len(f) for f in rows] + [10])
    print(f"{'test file':<{width}}  " + "  ".join(f"{c:>11}" for c in cols))
    total = collections.Counter()
    for f, r in sorted(rows.items()):
        total.update(r)
        print(f"{f:<{width}}  " + "  ".join(f"{r[c]:>11}" for c in cols))
    print(f"{'total':<{width}}  " + "  ".join(f"{total[c]:>11}" for c in cols))
    if door:
        print("\nTests whose outcome differs (direct -> door: the door's first error line):")
        for test in selected:
            (d, _), (g, m) = direct.get(test, ("not run", "")), door.get(test, ("not run", ""))
            if d != g:
                print(f"  {test}: {d} -> {g}: {first_line(m)}")
    failed_both = [t for t in selected if direct.get(t, ("",))[0] != "passed"]
    if failed_both:
        print(f"\nNot passed directly ({len(failed_both)}):")
        for test in failed_both:
            o, m = direct[test] if test in direct else ("not run", "")
            print(f"  {test}: {o}: {first_line(m)}")
    by_model = collections.defaultdict(list)
    for test, message in absent.items():
        by_model[message.split(ABSENT, 1)[1].strip()].append(test)
    print(f"\nDeselected, model absent ({len(absent)}):")
    for model, tests in sorted(by_model.items()):
        print(f"  {model} ({len(tests)}): " + ", ".join(sorted(t.replace("unit/", "", 1) for t in tests)))


if __name__ == "__main__":
    main(sys.argv)
