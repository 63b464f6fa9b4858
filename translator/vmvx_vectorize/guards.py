"""The dispatch-time checks of a vectorised kernel: the lines its program runs before
the first store, each `return False` sending the dispatch to the scalar translation.

    guards(kernel) -> [line, ...]

Written bindings must not overlap the others (per access interval where every access
has one, else whole bindings), each written binding's one address form must be
injective over the real grid and the parallel loops, and a workgroup id its address
ignores must have a count of 1; scratch buffers addressed by a loop of dispatch-time
trip count bring their own bounds and injectivity checks (kernel.py `scratch_access`).
"""

from __future__ import annotations

from translator.vmvx_vectorize.kernel import Kernel
from translator.vmvx_vectorize.values import COUNTS, GRID, NotVectorizable


def _footprints(kernel: Kernel):
    """Per binding the kernel touches, the element intervals of its accesses as
    expressions of the grid counts ("k: [(lo, hi, bytes), ...]" or "k: None" for a
    binding also accessed where no interval is known), or None where a written binding
    has no known interval (then whole bindings must be disjoint)."""
    spans: dict = {}
    for k, kind, key, par, form in kernel.accesses:
        iv = None if key is None else _interval(key)
        if iv is None or spans.get(k, []) is None:
            spans[k] = None
            continue
        entry = (*iv, {"f32": 4, "i32": 4, "i64": 8, "f64": 8}.get(kind, 1))
        if entry not in spans.setdefault(k, []):
            spans[k].append(entry)
    if any(spans.get(k) is None for k in kernel.written):
        return None
    out = []
    for k, v in sorted(spans.items()):
        text = "None" if v is None else "[" + ", ".join(f"({lo}, {hi}, {n})" for lo, hi, n in v) + "]"
        out.append(f"{k}: {text}")
    return out

def _interval(key):
    """(lo, hi) element offsets an affine canonical form reaches, as expressions of
    the grid counts, or None (a runtime-uniform term, a varying trip count)."""
    lo, hi = ["0"], ["0"]
    for atom, c in key:
        if atom == ():
            lo.append(str(c))
            hi.append(str(c))
            continue
        if isinstance(atom, tuple) and atom[0] == "u":  # (an offset from push constants)
            lo.append(f"{c} * {atom[1]}")
            hi.append(f"{c} * {atom[1]}")
            continue
        if atom in GRID:
            extent = COUNTS[atom]
        elif isinstance(atom, tuple) and atom[0] in ("div", "rem"):
            base, d = atom[1], atom[2]
            extent = f"-(-{COUNTS[base]} // {d})" if atom[0] == "div" else f"min({COUNTS[base]}, {d})"
        elif isinstance(atom, tuple) and atom[0] in ("axis", "seq") and atom[-1] is not None:
            extent = str(atom[-1])
        else:
            return None
        span = f"{c} * ({extent} - 1)"
        lo.append(f"min(0, {span})")
        hi.append(f"max(0, {span})")
    return " + ".join(lo), " + ".join(hi)

def guards(kernel: Kernel) -> list[str]:
    """Dispatch-time checks: written bindings disjoint from the others, and each
    written binding's single address form injective over the real grid."""
    out = [line for s in kernel.scratch for line in s.get("checks", ())]
    forms: dict = {}
    for k, kind, key, par, form in kernel.accesses:
        if k not in kernel.written:
            continue
        if key is None:
            raise NotVectorizable(f"binding {k} is written and accessed at a non-affine address")
        prev = forms.setdefault(k, (kind, key))
        if prev != (kind, key):
            raise NotVectorizable(f"binding {k} is accessed through more than one address form")
    if kernel.written:
        parts = _footprints(kernel)
        if parts is None:
            out.append(f"if not A.disjoint(ranges, {tuple(sorted(kernel.written))!r}):")
        else:
            out.append(f"if not A.disjoint_parts(ranges, {{{', '.join(parts)}}}, "
                       f"{tuple(sorted(kernel.written))!r}):")
        out.append("    return False")
    for k, (kind, key) in sorted(forms.items()):
        terms, covered = [], set()
        bases: dict = {}
        for atom, coef in key:
            if atom == () or (isinstance(atom, tuple) and atom[0] == "u"):
                continue
            if atom in GRID:
                extent = COUNTS[atom]
                bases.setdefault(atom, set()).add(("whole",))
            elif atom[0] in ("div", "rem"):
                base, c = atom[1], atom[2]
                bases.setdefault(base, set()).add((atom[0], c))
                extent = f"-(-{COUNTS[base]} // {c})" if atom[0] == "div" else f"min({COUNTS[base]}, {c})"
            elif atom[0] in ("axis", "seq"):
                if atom[-1] is None:
                    raise NotVectorizable(f"binding {k}: addressed by a loop of varying trip count")
                extent = str(atom[-1])
            else:
                raise NotVectorizable(f"binding {k}: address atom {atom!r}")
            terms.append(f"({coef}, {extent})")
        for g, parts in bases.items():
            if parts == {("whole",)}:
                covered.add(g)
            elif len(parts) == 2 and {p[0] for p in parts} == {"div", "rem"} and len({p[1] for p in parts}) == 1:
                covered.add(g)
            else:
                raise NotVectorizable(f"binding {k}: workgroup id {g} used in overlapping ways")
        for g in GRID:
            if g not in covered:
                out.append(f"if {COUNTS[g]} != 1:  # (binding {k}'s address ignores {g})")
                out.append("    return False")
        out.append(f"if not A.injective(({', '.join(terms)}{',' if len(terms) == 1 else ''})):")
        out.append("    return False")
    return out


__all__ = ["guards"]
