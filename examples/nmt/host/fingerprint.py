"""FarmHash Fingerprint64 (``farmhashna::Hash64``) in plain Python: the hash of the splits.

``tf.strings.to_hash_bucket_fast(s, n)`` is ``fingerprint64(s) % n``; the
splits (``examples.nmt.host.splits``) bucket a source by it, so they are the
splits the former ``tf.data`` pipeline carved with TensorFlow. Written from the
FarmHash definition (Pike and Alakuijala's farmhash.cc, the ``farmhashna``
variant that Fingerprint64 is): little-endian 64-bit reads, one formula for
0-16, 17-32 and 33-64 bytes, and 64-byte blocks for longer strings, all
arithmetic modulo 2**64.
"""

from __future__ import annotations

_MASK = (1 << 64) - 1
_K0 = 0xC3A5C85C97CB3127
_K1 = 0xB492B66FBE98F273
_K2 = 0x9AE16A3B2F90404F


def _fetch64(data: bytes, at: int) -> int:
    return int.from_bytes(data[at : at + 8], "little")


def _fetch32(data: bytes, at: int) -> int:
    return int.from_bytes(data[at : at + 4], "little")


def _rotate(value: int, shift: int) -> int:
    return value if shift == 0 else ((value >> shift) | (value << (64 - shift))) & _MASK


def _shift_mix(value: int) -> int:
    return value ^ (value >> 47)


def _hash_16(u: int, v: int, mul: int) -> int:
    a = ((u ^ v) * mul) & _MASK
    a ^= a >> 47
    b = ((v ^ a) * mul) & _MASK
    b ^= b >> 47
    return (b * mul) & _MASK


def _hash_0_to_16(data: bytes) -> int:
    length = len(data)
    if length >= 8:
        mul = _K2 + length * 2
        a = (_fetch64(data, 0) + _K2) & _MASK
        b = _fetch64(data, length - 8)
        c = (_rotate(b, 37) * mul + a) & _MASK
        d = ((_rotate(a, 25) + b) * mul) & _MASK
        return _hash_16(c, d, mul)
    if length >= 4:
        mul = _K2 + length * 2
        a = _fetch32(data, 0)
        return _hash_16(length + (a << 3), _fetch32(data, length - 4), mul)
    if length > 0:
        y = data[0] + (data[length >> 1] << 8)
        z = length + (data[length - 1] << 2)
        return (_shift_mix(((y * _K2) ^ (z * _K0)) & _MASK) * _K2) & _MASK
    return _K2


def _hash_17_to_32(data: bytes) -> int:
    length = len(data)
    mul = _K2 + length * 2
    a = (_fetch64(data, 0) * _K1) & _MASK
    b = _fetch64(data, 8)
    c = (_fetch64(data, length - 8) * mul) & _MASK
    d = (_fetch64(data, length - 16) * _K2) & _MASK
    return _hash_16(
        (_rotate((a + b) & _MASK, 43) + _rotate(c, 30) + d) & _MASK,
        (a + _rotate((b + _K2) & _MASK, 18) + c) & _MASK,
        mul,
    )


def _hash_33_to_64(data: bytes) -> int:
    length = len(data)
    mul = _K2 + length * 2
    a = (_fetch64(data, 0) * _K2) & _MASK
    b = _fetch64(data, 8)
    c = (_fetch64(data, length - 8) * mul) & _MASK
    d = (_fetch64(data, length - 16) * _K2) & _MASK
    y = (_rotate((a + b) & _MASK, 43) + _rotate(c, 30) + d) & _MASK
    z = _hash_16(y, (a + _rotate((b + _K2) & _MASK, 18) + c) & _MASK, mul)
    e = (_fetch64(data, 16) * mul) & _MASK
    f = _fetch64(data, 24)
    g = ((y + _fetch64(data, length - 32)) * mul) & _MASK
    h = ((z + _fetch64(data, length - 24)) * mul) & _MASK
    return _hash_16(
        (_rotate((e + f) & _MASK, 43) + _rotate(g, 30) + h) & _MASK,
        (e + _rotate((f + a) & _MASK, 18) + g) & _MASK,
        mul,
    )


def _weak_hash_32(data: bytes, at: int, a: int, b: int) -> tuple[int, int]:
    """``WeakHashLen32WithSeeds`` of the 32 bytes at ``at`` with seeds ``a``, ``b``."""
    w, x, y, z = (_fetch64(data, at + 8 * index) for index in range(4))
    a = (a + w) & _MASK
    b = _rotate((b + a + z) & _MASK, 21)
    c = a
    a = (a + x + y) & _MASK
    b = (b + _rotate(a, 44)) & _MASK
    return (a + z) & _MASK, (b + c) & _MASK


def fingerprint64(data: bytes) -> int:
    """FarmHash Fingerprint64 of ``data``: ``tf.strings.to_hash_bucket_fast``'s hash."""
    length = len(data)
    if length <= 16:
        return _hash_0_to_16(data)
    if length <= 32:
        return _hash_17_to_32(data)
    if length <= 64:
        return _hash_33_to_64(data)
    seed = 81
    x = seed
    y = (seed * _K1 + 113) & _MASK
    z = (_shift_mix((y * _K2 + 113) & _MASK) * _K2) & _MASK
    v0 = v1 = w0 = w1 = 0
    x = (x * _K2 + _fetch64(data, 0)) & _MASK
    end = (length - 1) // 64 * 64
    last64 = end + ((length - 1) & 63) - 63
    at = 0
    while at != end:  # 64-byte blocks
        x = (_rotate((x + y + v0 + _fetch64(data, at + 8)) & _MASK, 37) * _K1) & _MASK
        y = (_rotate((y + v1 + _fetch64(data, at + 48)) & _MASK, 42) * _K1) & _MASK
        x ^= w1
        y = (y + v0 + _fetch64(data, at + 40)) & _MASK
        z = (_rotate((z + w0) & _MASK, 33) * _K1) & _MASK
        v0, v1 = _weak_hash_32(data, at, (v1 * _K1) & _MASK, (x + w0) & _MASK)
        w0, w1 = _weak_hash_32(
            data, at + 32, (z + w1) & _MASK, (y + _fetch64(data, at + 16)) & _MASK
        )
        z, x = x, z
        at += 64
    mul = _K1 + ((z & 0xFF) << 1)
    at = last64  # the last 64 bytes
    w0 = (w0 + ((length - 1) & 63)) & _MASK
    v0 = (v0 + w0) & _MASK
    w0 = (w0 + v0) & _MASK
    x = (_rotate((x + y + v0 + _fetch64(data, at + 8)) & _MASK, 37) * mul) & _MASK
    y = (_rotate((y + v1 + _fetch64(data, at + 48)) & _MASK, 42) * mul) & _MASK
    x ^= (w1 * 9) & _MASK
    y = (y + v0 * 9 + _fetch64(data, at + 40)) & _MASK
    z = (_rotate((z + w0) & _MASK, 33) * mul) & _MASK
    v0, v1 = _weak_hash_32(data, at, (v1 * mul) & _MASK, (x + w0) & _MASK)
    w0, w1 = _weak_hash_32(data, at + 32, (z + w1) & _MASK, (y + _fetch64(data, at + 16)) & _MASK)
    z, x = x, z
    return _hash_16(
        (_hash_16(v0, w0, mul) + _shift_mix(y) * _K0 + z) & _MASK,
        (_hash_16(v1, w1, mul) + x) & _MASK,
        mul,
    )
