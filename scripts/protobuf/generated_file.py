"""Writing a generated file, or checking that the checked-in one is current:
the one step the generators under scripts/protobuf/ share."""

import sys


def write_or_check(path, content, check, script, summary):
    """With `check`, exit with an error unless `path` holds `content`;
    otherwise write it and print `summary`."""
    if check:
        with open(path) as f:
            if f.read() != content:
                sys.exit(f"{path} is out of date: run {script}")
        print(f"{path} is up to date")
        return
    with open(path, "w") as f:
        f.write(content)
    print(summary)
