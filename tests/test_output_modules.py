"""``s2sad FILE:FUNC --output OUT.py`` writes a module that runs: every mode has its imports,
the globals it reads come from the user's module, and the Python functions of the user's
``defvjp`` rules are reachable.  Each output is imported in a fresh process, next to the
user's module, and its result compared with s2sad's own function."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from s2sad.cli import main

USER_MODULE = textwrap.dedent('''
    import numpy as np
    import scipy.stats
    import s2sad

    SCALE = 0.5
    OFFSETS = np.array([0.1, -0.2, 0.3])


    def wiggle(x):
        return np.sin(x)


    s2sad.defvjp(wiggle, lambda g, ans, x: g * np.cos(x))


    def helper(x):
        return x * 2.0 + OFFSETS


    def loss(x):
        return np.sum(np.tanh(helper(x)) ** 2) * SCALE + np.sum(wiggle(x) * x)


    def smooth(x):
        return np.sum(np.tanh(helper(x)) ** 2) * SCALE


    def through_objects(x):
        # rules of methods reached through objects: bound in the written module by their path
        return np.add.reduce(x ** 3) + np.sum(scipy.stats.norm.logpdf(x, 0.2, 1.5))
''')

X = [0.3, -0.5, 0.7]
V = [1.0, 0.5, -2.0]

CASES = [  # (function, mode, how the written function is called, the s2sad call it must match)
    ("loss", "reverse", "fn(x)", "s2sad.grad(user.loss)(x)"),
    ("smooth", "forward", "fn(x, v)", "s2sad.jvp(user.smooth)(x, v)"),
    ("smooth", "hvp", "fn(x, v)[1]", "s2sad.hvp(user.smooth)(x, v)"),  # (gradient, hvp)
    ("through_objects", "reverse", "fn(x)", "s2sad.grad(user.through_objects)(x)"),
    ("through_objects", "forward", "fn(x, v)", "s2sad.jvp(user.through_objects)(x, v)"),
]


@pytest.mark.parametrize("function, mode, call, expected", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_the_written_module_runs_in_a_fresh_process(tmp_path, capsys, function, mode, call, expected):
    (tmp_path / "user.py").write_text(USER_MODULE)
    out = tmp_path / "written.py"
    assert main([f"{tmp_path / 'user.py'}:{function}", "--mode", mode, "--output", str(out)]) == 0
    capsys.readouterr()
    text = out.read_text()
    assert "# reads from" not in text  # nothing left for the reader to supply
    name = next(line.split("(")[0][4:] for line in text.splitlines() if line.startswith("def "))
    probe = textwrap.dedent(f'''
        import json
        import numpy as np
        import s2sad
        import user
        import written
        x, v = np.array({X}), np.array({V})
        fn = written.{name}
        got, want = {call}, {expected}
        print(json.dumps([np.ravel(np.array(got, dtype=float)).tolist(),
                          np.ravel(np.array(want, dtype=float)).tolist()]))
    ''')
    result = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    got, want = json.loads(result.stdout)
    np.testing.assert_allclose(got, want, rtol=1e-12)
