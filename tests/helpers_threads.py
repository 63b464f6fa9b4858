"""Shared by the tests that run one context from several threads at once."""

from __future__ import annotations

import threading


def outputs_from_threads(call, inputs, calls: int) -> list[list]:
    """Per entry of `inputs`, the results of `calls` calls `call(*that_entry)`, each
    entry's calls on its own thread, all threads at once; an exception on any thread is
    raised here."""
    got = [[] for _ in inputs]
    errors = []

    def work(k):
        try:
            for _ in range(calls):
                got[k].append(call(*inputs[k]))
        except Exception as e:  # raised below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return got
