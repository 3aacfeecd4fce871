"""Every code block in README.md runs as written (issue 18).

The ``python`` blocks run in order, as one script in a fresh process (like a session
typed top to bottom), from a temporary folder.  A block marked
``<!-- readme:excerpt PATH -->`` quotes s2sad's own source: each of its lines must
appear in that file.  ``sh`` blocks are the commands of the quick start and the
examples, run by CI and tests/test_examples.py.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
EXCERPT = re.compile(r"<!-- readme:excerpt (\S+) -->")


class Block(NamedTuple):
    lang: str
    code: str
    excerpt_of: str | None  # the file a quoted block comes from


def blocks() -> list[Block]:
    """The fenced code blocks of README.md (indented ones too, dedented)."""
    out: list[Block] = []
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("```"):
            indent = len(line) - len(line.lstrip())
            marker = EXCERPT.fullmatch(lines[i - 1].strip()) if i else None
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            code = "\n".join(text[indent:] for text in lines[i + 1:end]) + "\n"
            out.append(Block(line.strip()[3:], code, marker and marker.group(1)))
            i = end
        i += 1
    return out


def test_python_blocks_run_as_written(tmp_path):
    script = "\n\n".join(b.code for b in blocks() if b.lang == "python" and not b.excerpt_of)
    (tmp_path / "readme_blocks.py").write_text(script, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, "readme_blocks.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_excerpts_quote_the_source():
    excerpts = [b for b in blocks() if b.excerpt_of]
    assert excerpts
    for b in excerpts:
        source = {line.strip() for line in (ROOT / b.excerpt_of).read_text(encoding="utf-8").splitlines()}
        for line in b.code.splitlines():
            code = re.sub(r"\s+#.*$", "", line).strip()
            assert code in {re.sub(r"\s+#.*$", "", s) for s in source}, f"{b.excerpt_of} has no line {code!r}"
