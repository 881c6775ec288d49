"""The derivation checker accepts valid steps and rejects every kind of wrong one."""

import dataclasses

import pytest
import sympy as sp

from derivations import (
    Derivation,
    DerivationError,
    get,
    given,
    lookup_symbol,
    rename,
    rewrite,
    solve,
    substitute,
)

x, y, z, a = sp.symbols("x y z a", positive=True)


def test_valid_steps_of_each_kind_pass():
    Derivation(
        given(y, a * x + a, "premise"),
        rewrite(y / a, x + 1, "divide both sides by a"),
        substitute({x: z**2}, y / a, z**2 + 1, "x is z squared"),
        solve(y, a * (z**2 + 1), "solve for y"),
        rename(sp.Symbol("w", positive=True), a * z**2 + a, "call it w"),
    ).verify()


@pytest.mark.parametrize(
    "bad",
    [
        rewrite(y, a * x + 2 * a, "dropped a factor"),
        rewrite(y / a, x, "lost the constant"),
        substitute({x: z}, y, a * z + 2, "substituted wrongly"),
        solve(x, y / a, "forgot the minus one"),
        rename(sp.Symbol("w"), a * x, "renamed a different expression"),
    ],
)
def test_wrong_steps_are_rejected(bad):
    with pytest.raises(DerivationError, match="does not follow"):
        Derivation(given(y, a * x + a, "premise"), bad).verify()


def test_multiplying_by_zero_is_not_a_rewrite():
    with pytest.raises(DerivationError):
        Derivation(given(y, x, "premise"), rewrite(0 * y, 0 * x, "times zero")).verify()


def test_multiplying_through_needs_a_factor_of_known_sign():
    t = sp.Symbol("t")  # of no sign: it may be zero
    premise = given(y, x + 1, "premise")
    Derivation(premise, rewrite(a * y - a, a * x, "times a")).verify()
    Derivation(premise, rewrite(-a * y, -a * x - a, "times -a")).verify()
    with pytest.raises(DerivationError, match="does not follow"):
        Derivation(premise, rewrite(t * y - t, t * x, "times t")).verify()
    with pytest.raises(DerivationError, match="does not follow"):
        Derivation(premise, rewrite(a * y - 1, a * x, "times a, but not the 1")).verify()


def test_a_derivation_must_start_with_a_premise():
    with pytest.raises(DerivationError, match="given"):
        Derivation(rewrite(y, x, "no premise"))


def test_wrong_step_in_a_registered_equation_fails_its_check():
    eq = get("crossover_batch")
    steps = list(eq.derivation.steps)
    wrong = steps[2].relation.rhs / 2  # a slipped factor of two
    steps[2] = solve(steps[2].unknown, wrong, steps[2].why)
    broken = dataclasses.replace(eq, derivation=Derivation(*steps))
    with pytest.raises(DerivationError, match="equation 'crossover_batch': step 3"):
        broken.check()


def test_a_derivation_that_ends_elsewhere_fails():
    eq = get("worst_case_latency")
    steps = list(eq.derivation.steps)[:-1]
    broken = dataclasses.replace(eq, derivation=Derivation(*steps))
    with pytest.raises(DerivationError, match="ends at"):
        broken.check()


def test_a_step_that_does_not_balance_dimensionally_fails_the_check():
    eq = get("compute_time")
    first, second = eq.derivation.steps
    flops, batch, active = (
        lookup_symbol(n).sym for n in ("flops_per_param_token", "batch_size", "n_active")
    )
    # The "hidden factor" forgotten: B N_active is a count, not FLOPs.
    wrong = substitute(
        {second.subs[0][0]: batch * active},
        second.relation.lhs,
        second.relation.rhs / flops,
        second.why,
    )
    broken = dataclasses.replace(eq, derivation=Derivation(first, wrong))
    with pytest.raises(
        DerivationError,
        match=r"step 2 .* is \[time\] but .* is \[time\] \* \[token\] / \[compute\]",
    ):
        broken.check()


def test_a_max_with_a_common_factor_hidden_in_a_sum_is_still_proven_equal():
    # the composed floor's shape: the gcd misses c in ((F k + c W r) / W, a + c), so pulling
    # factors out leaves two forms; pushing the factor in matches the arguments pairwise
    from derivations.derivation import same

    p, c, a, k, F, W, r, e, u = sp.symbols("p c a k F W r e u", positive=True)
    share = e * r - r + 1  # the weights read: all but the routed share, plus the experts touched
    pulled = p * c * sp.Max(a / (u * c) + 1, F * k / (u * c * W) + share) / F
    plain = p * sp.Max((F * k + u * c * W * share) / W, a + u * c) / (u * F)
    assert same(pulled, plain)
    assert not same(pulled, p * sp.Max((F * k + u * c * W * share) / W, a + 2 * u * c) / (u * F))
    assert not same(pulled, 2 * plain)


# -- proved steps remembered on disk (units/diskcache.py) ------------------------------------


@pytest.fixture
def proofs(empty_cache, monkeypatch):
    """A fresh, empty proof store for one test; ``calls`` counts the steps sympy really checks."""
    from derivations import derivation

    calls = []
    checked = derivation.Step._follows_from

    def counted(step, prev):
        calls.append(step.why)
        return checked(step, prev)

    monkeypatch.setattr(derivation.Step, "_follows_from", counted)
    return calls


def _steps(last_rhs=a * (z**2 + 1)):
    return (
        given(y, a * x + a, "premise"),
        rewrite(y / a, x + 1, "divide both sides by a"),
        substitute({x: z**2}, y / a, z**2 + 1, "x is z squared"),
        solve(y, last_rhs, "solve for y"),
    )


def test_a_proved_step_is_not_checked_again_in_the_next_build(proofs):
    Derivation(*_steps()).verify()
    assert len(proofs) == 3
    Derivation(*_steps()).verify()  # as another process would: the in-memory cache is no help
    assert len(proofs) == 3


def test_a_changed_step_is_checked_again(proofs):
    Derivation(*_steps()).verify()
    Derivation(*_steps(last_rhs=a * z**2 + a)).verify()  # the same value, written otherwise
    assert proofs[3:] == ["solve for y"]


def test_a_wrong_step_fails_with_a_warm_cache_and_is_never_stored(proofs):
    Derivation(*_steps()).verify()
    for _ in range(2):
        with pytest.raises(DerivationError, match="step 4 .* does not follow"):
            Derivation(*_steps(last_rhs=a * (z**2 + 2))).verify()
    assert proofs[3:] == ["solve for y", "solve for y"]


def test_a_wrong_step_in_an_equation_fails_after_its_right_form_was_proved(proofs):
    eq = get("crossover_batch")
    eq.derivation.verify()
    steps = list(eq.derivation.steps)
    steps[2] = solve(steps[2].unknown, steps[2].relation.rhs / 2, steps[2].why)
    with pytest.raises(DerivationError, match="step 3"):
        dataclasses.replace(eq, derivation=Derivation(*steps)).check()


def test_damaged_or_foreign_entries_are_checked_again(proofs, tmp_path):
    Derivation(*_steps()).verify()
    entries = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert entries
    for entry in entries:
        entry.write_bytes(entry.read_bytes()[:-1])
    Derivation(*_steps()).verify()
    assert len(proofs) == 6  # all three again
    # a proved step's entry put in the place of a wrong step's key proves nothing
    from derivations.derivation import _proofs

    wrong = _steps(last_rhs=a * (z**2 + 2))
    key = "\n".join(
        ["step solve", *(sp.srepr(p) for p in (wrong[3].relation, wrong[2].relation, (), y))]
    )
    path, _ = _proofs()._path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(entries[0].read_bytes())
    with pytest.raises(DerivationError, match="step 4"):
        Derivation(*wrong).verify()


def test_symbols_assumptions_are_part_of_the_key(proofs):
    """``x`` positive and ``x`` of no sign print alike but are different symbols to sympy."""
    from derivations.derivation import same

    t = sp.Symbol("t")
    assert same(sp.sqrt(x**2), x)
    assert not same(sp.sqrt(t**2), t)


@pytest.mark.parametrize("variable", ["CHALKBOARD_FAST", "CHALKBOARD_CACHE"])
def test_with_the_cache_off_every_step_is_checked(proofs, tmp_path, monkeypatch, variable):
    monkeypatch.setenv(variable, "0")
    for _ in range(2):
        Derivation(*_steps()).verify()
    assert len(proofs) == 6
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]


def test_the_store_version_names_sympy_and_the_checkers_source(monkeypatch):
    from derivations.derivation import _proofs

    version = _proofs().version
    _proofs.cache_clear()
    monkeypatch.setattr(sp, "__version__", sp.__version__ + ".post1")
    try:
        assert _proofs().version != version
    finally:
        _proofs.cache_clear()


def test_a_point_rejects_only_sides_that_differ():
    """The fixed-point test that spares sympy's simplify on a false step: it rejects sides that
    differ (by a term, by a factor of a power) and never sides that are equal, whatever form
    they take (a max, an exponential of a logarithm, an integer symbol)."""
    from derivations.derivation import _differ_at_a_point

    x, y = sp.symbols("x y", positive=True)
    n = sp.Symbol("n", integer=True, positive=True)
    equal = [
        (x * (x + y), x**2 + x * y),
        (sp.Max(2 * x, 2 * y), 2 * sp.Max(x, y)),
        ((1 - x) ** n, sp.exp(n * sp.log(1 - x))),
        (sp.exp(y * sp.log(x)), x**y),
    ]
    for a, b in equal:
        assert not _differ_at_a_point(a, b), (a, b)
    differ = [(x + y, x * y), (x**n, x ** (n + 1)), (sp.Max(x, y), sp.Min(x, y) + x - x)]
    for a, b in differ:
        assert _differ_at_a_point(a, b), (a, b)
    assert not _differ_at_a_point(1 / (x - x), x)  # no number at the point: no verdict


def test_the_cheap_proofs_accept_identities_and_nothing_else(monkeypatch):
    """The tests tried before sympy's simplify (powers of one base multiplied, arguments of a
    max matched after expanding or cancelling) prove by algebra, never by numbers: with the
    fixed-point rejection turned off, a wrong exponent or argument is still rejected."""
    from derivations import derivation

    monkeypatch.setattr(derivation, "_differ_at_a_point", lambda a, b: False)
    same = derivation._same.__wrapped__  # not the remembered verdicts

    p, q, t, s, c = sp.symbols("p q t s c", positive=True)
    split = t ** (p / (p + q)) * t ** (q / (p + q))
    assert derivation._powers_combined(sp.expand(split - t)) == 0  # the cheap test proves it
    assert same(split, t)
    assert not same(split, t**2)
    assert not same(t ** (p / (p + q)) * t ** (p / (p + q)), t)
    pulled = c * sp.Max(s / c + 1, t / c)  # a positive factor pushed into the max
    pushed = derivation._into_max(pulled), sp.Max(s + c, t)
    assert derivation._same_arguments(*pushed, zero=derivation._cheap_zero)
    assert same(pulled, sp.Max(s + c, t))
    assert not same(pulled, sp.Max(s + c, 2 * t))
    assert not same(pulled, sp.Max(s + 2 * c, t))


def test_a_derivation_stores_its_steps_not_the_checks_inside_them(proofs, tmp_path):
    Derivation(*_steps()).verify()
    entries = [p for p in tmp_path.rglob("*") if p.is_file() and "proofs" in p.parts]
    assert len(entries) == 3  # one per step proved; the sides compared inside it are not kept
