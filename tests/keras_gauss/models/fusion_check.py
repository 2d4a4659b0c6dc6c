"""Reads an HLO module's text (before XLA's optimizations): which summing
scatters could have the backward pass fused into their updates.

XLA may fuse the computation of a scatter's `updates` operand into the
scatter itself; on a GPU the updates of a frequent row then serialize, each
rerunning that fused work. A scatter that *sums* (its combiner adds) float
rows is safe when its updates reach no gather, reduce, dot, sort or other
scatter before an optimization barrier (`opt-barrier`), a constant or an
argument of the step: cheap elementwise and shape work in between is fine.
"""

import re

# Work that a fused scatter update must not rerun once per update.
HEAVY = ("gather", "dynamic-slice", "reduce", "reduce-window", "dot", "convolution", "sort",
         "scatter", "custom-call", "while", "rng", "rng-bit-generator", "fusion")
_INSTRUCTION = re.compile(r"^\s*(ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
_COMPUTATION = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+).*\{$")  # unindented, ends in {


class Instruction:
    def __init__(self, name, opcode, operands, attributes, root):
        self.name, self.opcode, self.operands = name, opcode, operands
        self.attributes, self.root = attributes, root

    def computations(self, key):
        """The computations an attribute names (`to_apply=%x`, `branch_computations={%a, %b}`)."""
        match = re.search(key + r"=\{?([^}]*?)\}?(?:,\s*[a-z_]+=|$)", self.attributes)
        if not match:
            return []
        return [name.strip().lstrip("%") for name in match.group(1).split(",") if name.strip()]


def _split_top(text):
    """Splits at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _parse_instruction(line):
    match = _INSTRUCTION.match(line)
    if not match:
        return None
    root, name, rest = bool(match.group(1)), match.group(2), match.group(3)
    # rest: TYPE opcode(operands), attributes; TYPE may be a tuple "(f32[2], s32[])"
    depth, i = 0, 0
    while i < len(rest):
        if rest[i] in "([{":
            depth += 1
        elif rest[i] in ")]}":
            depth -= 1
        elif rest[i] == " " and depth == 0:
            break
        i += 1
    shape, body = rest[:i], rest[i:].strip()
    opcode_match = re.match(r"([\w\-]+)\(", body)
    if not opcode_match:
        return None
    opcode = opcode_match.group(1)
    depth, j = 0, len(opcode)
    for j in range(len(opcode), len(body)):
        if body[j] == "(":
            depth += 1
        elif body[j] == ")":
            depth -= 1
            if depth == 0:
                break
    operands = [p.split()[-1].lstrip("%") for p in _split_top(body[len(opcode) + 1:j])]
    instruction = Instruction(name, opcode, operands, body[j + 1:].lstrip(", "), root)
    instruction.shape = shape
    return instruction


def parse(text):
    """`{computation: {instruction name: Instruction}}` and the entry's name."""
    computations, entry, current = {}, None, None
    for line in text.splitlines():
        if current is None:
            match = None if line[:1].isspace() else _COMPUTATION.match(line.rstrip())
            if match:
                current = computations.setdefault(match.group(2), {})
                if match.group(1):
                    entry = match.group(2)
            continue
        if line.strip() == "}":
            current = None
            continue
        instruction = _parse_instruction(line)
        if instruction is not None:
            current[instruction.name] = instruction
    return computations, entry


def _root(computation):
    return next(i for i in computation.values() if i.root)


def summing_scatters(computations):
    """`(computation, scatter)` of every scatter of float rows whose combiner adds."""
    found = []
    for name, computation in computations.items():
        for instruction in computation.values():
            if instruction.opcode != "scatter" or not instruction.shape.startswith(
                    ("f32", "f16", "bf16", "f64")):
                continue
            combiner = computations[instruction.computations("to_apply")[0]]
            if _root(combiner).opcode == "add":
                found.append((name, instruction))
    return found


def unguarded_work(text):
    """For every summing scatter of float rows, the heavy work that its
    updates reach before a barrier: `[(scatter, [opcode, ...])]`, empty when
    every such scatter reads only materialized rows."""
    computations, _ = parse(text)
    callers = {}  # computation -> [(caller computation, instruction, operand offset)]
    for name, computation in computations.items():
        for instruction in computation.values():
            if instruction.opcode == "call":
                for callee in instruction.computations("to_apply"):
                    callers.setdefault(callee, []).append((name, instruction, 0))
            elif instruction.opcode == "conditional":
                branches = (instruction.computations("branch_computations")
                            or instruction.computations("true_computation")
                            + instruction.computations("false_computation"))
                for k, callee in enumerate(branches):
                    callers.setdefault(callee, []).append((name, instruction, k + 1))

    def walk(computation, name, index, seen, heavy):
        key = (computation, name, index)
        if key in seen:
            return
        seen.add(key)
        instruction = computations[computation][name]
        opcode = instruction.opcode
        if opcode in ("opt-barrier", "constant", "iota"):
            return
        if opcode == "parameter":
            number = int(instruction.operands[0])  # parameter(N)
            for caller, call, offset in callers.get(computation, []):
                walk(caller, call.operands[number + offset], index, seen, heavy)
            return  # the entry's arguments: inputs of the step
        if opcode == "get-tuple-element":
            number = int(re.search(r"index=(\d+)", instruction.attributes).group(1))
            walk(computation, instruction.operands[0], number, seen, heavy)
            return
        if opcode == "tuple":
            chosen = instruction.operands if index is None else [instruction.operands[index]]
            for operand in chosen:
                walk(computation, operand, None, seen, heavy)
            return
        if opcode in ("call", "conditional"):
            if opcode == "call":
                callees = instruction.computations("to_apply")
            else:
                callees = (instruction.computations("branch_computations")
                           or instruction.computations("true_computation")
                           + instruction.computations("false_computation"))
            for callee in callees:
                walk(callee, _root(computations[callee]).name, index, seen, heavy)
            return
        if opcode in HEAVY or opcode.startswith("rng"):
            heavy.append(f"{opcode} {name}")
            return
        for operand in instruction.operands:
            walk(computation, operand, None, seen, heavy)

    problems = []
    for computation, scatter in summing_scatters(computations):
        heavy = []
        walk(computation, scatter.operands[2], None, set(), heavy)
        if heavy:
            problems.append((scatter.name, sorted(set(heavy))))
    return problems
