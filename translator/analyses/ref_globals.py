"""Which `vm.global.load.ref`s cannot fail their type check, module-wide.

Ref globals start null and change only through `vm.global.store.ref` and
`vm.global.store.indirect.ref` of the module's own functions (a context's globals are
its own), and every store checks its value against the store's type. A direct load of
slot k with type T therefore needs no check when every store that may reach slot k (the
direct stores to k and every indirect store) has T's canonical type, or T is the
wildcard: whatever the slot holds already passed the same test. The verifier has checked
direct slot ordinals against the module's ref global count, so such a load is a plain
read of the slot (`refs.get(k)` in generated code).
"""

from __future__ import annotations

from runtime_support.vm.refs import ANY, canonical_type_name


def unchecked_ref_loads(module, functions) -> frozenset[tuple[int, int]]:
    """(slot, type ordinal) of each direct ref-global load whose type check cannot fail."""
    stored: dict[int, set[str]] = {}
    anywhere: set[str] = set()  # types of indirect stores: they may reach every slot
    loads: set[tuple[int, int]] = set()
    for fn in functions:
        for op in fn.ops():
            if op.spec.emit != "global":
                continue
            # The ISA table's fields say which global op this is: the address (an
            # immediate ordinal, or a register for the indirect forms) and the value
            # (written by a load, read by a store; bank "ref" for ref globals).
            value = next(f for f in op.spec.fields if f.name in ("value", "result"))
            if value.bank != "ref":
                continue
            indirect = op.spec.fields[0].is_register
            if value.write:
                if not indirect:
                    loads.add((op["global"], op["type_def"]))
            elif indirect:
                anywhere.add(_canon(module, op["type_def"]))
            else:
                stored.setdefault(op["global"], set()).add(_canon(module, op["type_def"]))
    out = set()
    for slot, type_def in loads:
        want = _canon(module, type_def)
        if want == ANY or all(t == want for t in stored.get(slot, set()) | anywhere):
            out.add((slot, type_def))
    return frozenset(out)


def _canon(module, type_def: int) -> str:
    return canonical_type_name(module.types[type_def])
