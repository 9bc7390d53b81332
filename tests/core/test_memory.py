"""Arrow's allocator under `bold-eval` (peak memory grows with the rows a stage holds)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CHECK = ("from bold_eval.core.memory import use_returning_allocator; import pyarrow as pa; "
         "use_returning_allocator(); print(pa.default_memory_pool().backend_name)")


@pytest.mark.parametrize(("pool", "expected"), [(None, "system"), ("mimalloc", "mimalloc")])
def test_the_cli_allocator_gives_memory_back_unless_the_user_chose_one(pool, expected):
    env = {key: value for key, value in os.environ.items() if key != "ARROW_DEFAULT_MEMORY_POOL"}
    if pool:
        env["ARROW_DEFAULT_MEMORY_POOL"] = pool
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip() == expected


def test_the_cli_sets_it_before_any_command(monkeypatch):
    from bold_eval import cli

    called = []
    monkeypatch.setattr("bold_eval.core.memory.use_returning_allocator", lambda: called.append(True))
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert called == [True]
