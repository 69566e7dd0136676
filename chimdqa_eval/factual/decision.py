"""The rule judge as decision lists: each reference kind (numeric, text, long) has one ordered list of named rules,
and the first rule that fires on a Case gives the verdict. The engine, not the rules, applies the shared guards:
a rule may be skipped when the answer refuses in some way (`unless`), offers alternatives (`alone`), or when the
reference was (or was not) found in the answer (`when`). `judge-rules` prints the lists (commands/judge_rules.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, NamedTuple

GRADE_ORDER = {"CO": 0, "NA": 1, "IN": 2}
REFUSAL_KINDS = frozenset({"refusal", "apology", "guess", "refusal_then_claim"})  # what Case.refusal may say


class Verdict(NamedTuple):
    """grade, certain, reason = judge_answer(...)"""
    grade: str       # CO | NA | IN
    certain: bool    # the rules found an unambiguous match, refusal or contradiction
    reason: str      # the rule's reason code, machine-readable (number_match, refusal, several_numbers, ...)


class Decision(NamedTuple):
    """A verdict and the registered name of the rule that gave it (items.jsonl's `rule`)."""
    grade: str
    certain: bool
    reason: str
    rule: str

    @property
    def verdict(self) -> Verdict:
        return Verdict(self.grade, self.certain, self.reason)


@dataclass(frozen=True)
class Rule:
    """One rule of a decision list. `test(case)` returns a Verdict when the rule fires, else None; `grades` and
    `reasons` are what it may give (checked by the tests), `certain` says when it is sure."""
    name: str                        # registered name: family.rule (text.alternatives)
    test: Callable | None            # None: a step the family applies itself (documented, listed, traced)
    grades: str                      # "CO", "NA", "IN" or several: "CO/IN"
    reasons: tuple                   # reason codes it may give
    certain: str                     # "yes", "no" or when: "unless hedged"
    examples: tuple = ()             # (answer, reference, question) it decides
    unless: frozenset = frozenset()  # refusal kinds (Case.refusal) that skip the rule
    alone: bool = False              # skipped when the answer offers alternatives (或, 还是)
    when: str = ""                   # "found": only when the reference's form was found; "missing": only when not
    note: str = ""


def rule(name: str, grades: str, reasons, certain: str, *examples, unless=(), alone=False, when="", note=""):
    """Decorator: register a function of a Case as a Rule (the module's list names the order)."""
    reasons = (reasons,) if isinstance(reasons, str) else tuple(reasons)
    unless = frozenset(REFUSAL_KINDS if unless == "any" else (unless,) if isinstance(unless, str) else unless)

    def wrap(test):
        return Rule(name, test, grades, reasons, certain, examples, unless, alone, when, note or (test.__doc__ or ""))
    return wrap


def step(name: str, grades: str, reasons, certain: str, note: str, examples=()) -> Rule:
    """A listed step that the family or the engine applies itself (a relabelling of a rule's verdict)."""
    return Rule(name, None, grades, (reasons,) if isinstance(reasons, str) else tuple(reasons), certain,
                tuple(examples), note=note)


@dataclass(frozen=True)
class Family:
    """The decision list of one reference kind: its rules in order, then `settle`, which may relabel the verdict
    of a rule (the numeric family reads a wrong-looking answer without a number its own way)."""
    name: str
    rules: tuple
    settle: Callable | None = None
    steps: tuple = field(default=())  # the steps settle applies, listed after the rules

    def __post_init__(self):
        # the rules to try when the reference's form was found and when not (`when`), as plain tuples: the engine
        # runs once per reading of every answer
        def plan(found: bool) -> tuple:
            return tuple((r.test, r.name, r.unless, r.alone) for r in self.rules
                         if r.test is not None and r.when in ("", "found" if found else "missing"))
        object.__setattr__(self, "_plans", (plan(False), plan(True)))

    def decide(self, case) -> Decision:
        # a rule the answer's refusal kind (`unless`) or its alternatives (`alone`) would overrule is not tried: the
        # rules are pure functions of the Case, so skipping one whose verdict would be dropped changes nothing
        for test, name, unless, alone in self._plans[bool(case.found)]:
            if (unless and case.refusal in unless) or (alone and case.offers_alternatives):
                continue
            verdict = test(case)
            if verdict is not None:
                decision = Decision(*verdict, name)
                return self.settle(case, decision) if self.settle else decision
        raise AssertionError(f"decision list {self.name} ended without a verdict")  # its last rule always fires

    def listing(self) -> tuple:
        return (*self.rules, *self.steps)
