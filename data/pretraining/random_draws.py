"""`random.Random.shuffle` and `randint` with the same draws, at about half the cost.

Both methods draw `getrandbits(k)` with rejection (CPython's `_randbelow`); the functions here
make the same calls without the method overhead, so a generator used through them stays in
step with code that calls the methods. `_inline_draws_match` checks this once, at import, and
falls back to the methods on a Python whose `random` draws differently.
"""

import random

_BITS = [n.bit_length() for n in range(1 << 12)]


def _below(getrandbits, n):
    k = _BITS[n] if n < 4096 else n.bit_length()
    value = getrandbits(k)
    while value >= n:
        value = getrandbits(k)
    return value


def randint(rng, low, high):
    """Returns `rng.randint(low, high)`, drawing exactly as it does."""
    return low + _below(rng.getrandbits, high - low + 1)


def shuffle(rng, items):
    """Shuffles `items` in place as `rng.shuffle(items)` does."""
    getrandbits = rng.getrandbits
    bits = _BITS
    for i in range(len(items) - 1, 0, -1):
        n = i + 1
        k = bits[n] if n < 4096 else n.bit_length()
        j = getrandbits(k)
        while j >= n:
            j = getrandbits(k)
        items[i], items[j] = items[j], items[i]


def _inline_draws_match():
    ours, theirs = random.Random(7), random.Random(7)
    for n in (1, 2, 3, 5, 64, 127, 4096, 5000):
        a, b = list(range(n)), list(range(n))
        shuffle(ours, a)
        theirs.shuffle(b)
        if a != b or randint(ours, 0, n) != theirs.randint(0, n):
            return False
    return ours.random() == theirs.random()


if not _inline_draws_match():  # A Python whose `random` draws differently.

    def randint(rng, low, high):
        return rng.randint(low, high)

    def shuffle(rng, items):
        rng.shuffle(items)
