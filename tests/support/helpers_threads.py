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


def call_behind_held_queue(queue, call):
    """`call()` on a thread of its own while another thread holds `queue` (LocalQueue
    run_now): asserts the call is still waiting half a second later (its queue work
    waits behind the holder's), lets the holder go and returns the call's result."""
    holding, release = threading.Event(), threading.Event()

    def hold(_a, _b):
        holding.set()
        release.wait(30)

    holder = threading.Thread(target=queue.run_now, args=(hold, None, None, "test"))
    holder.start()
    assert holding.wait(30)
    result = {}
    caller = threading.Thread(target=lambda: result.setdefault("got", call()))
    caller.start()
    caller.join(0.5)
    assert caller.is_alive()  # (its work waits behind the holder's)
    release.set()
    holder.join(30)
    caller.join(30)
    return result["got"]
