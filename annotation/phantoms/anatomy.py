"""Vectorised 2-D drawing of smooth shapes and the anatomy of each body region.

Shapes are star-shaped ellipses (optionally wobbled by Fourier harmonics and spikes) with an
approximate signed distance `d` (pixels, positive inside). A shape's mask is `d > 0`; painting
blends a value in with alpha `clip(d / soft + 0.5, 0, 1)`, so `soft` sets the edge sharpness.
Image convention (axial builders here, coronal and sagittal ones in `anatomy_planes.py`): radiological
— axial: patient's right on image left, anterior at the top; coronal: patient's right on image left,
superior at the top; sagittal: anterior on image left, superior at the top.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from PIL import Image

TAU = 2 * math.pi
_LUT_N = 4096
_PA = np.linspace(-2.0, 2.0, _LUT_N + 1) + 2.0 / _LUT_N          # bin centres of the pseudo-angle
_Q = 1 - np.abs(_PA)                                                 # u / (|u| + |v|)
_ANGLES = np.arctan2(np.sign(_PA) * (1 - np.abs(_Q)), _Q)


class Part(NamedTuple):
    cx: float
    cy: float
    rx: float
    ry: float
    rot: float = 0.0              # radians
    harm: tuple = ()              # ((k, amplitude, phase), ...) relative radius wobble
    spikes: tuple = ()            # ((angle, height, angular half-width), ...)

    def reach(self) -> float:
        wob = sum(abs(h[1]) for h in self.harm) + max((s[1] for s in self.spikes), default=0.0)
        return max(self.rx, self.ry) * (1.0 + wob)

    def grow(self, d: float) -> Part:
        return self._replace(rx=max(self.rx + d, 0.5), ry=max(self.ry + d, 0.5))

    def radius_table(self) -> np.ndarray:
        """Relative radius at each pseudo-angle bin of `_ANGLES`."""
        rad = np.ones_like(_ANGLES)
        for k, a, p in self.harm:
            rad += a * np.cos(k * _ANGLES + p)
        for t, hgt, wid in self.spikes:
            dth = np.abs((_ANGLES - t + math.pi) % TAU - math.pi)
            rad += hgt * np.maximum(1.0 - dth / wid, 0.0)
        return rad.astype(np.float32)

    def sdf(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        c, s = math.cos(self.rot), math.sin(self.rot)
        dx, dy = xs - np.float32(self.cx), ys - np.float32(self.cy)
        u = dx * np.float32(c / self.rx) + dy * np.float32(s / self.rx)
        v = dy * np.float32(c / self.ry) - dx * np.float32(s / self.ry)
        rho = u * u
        rho += v * v
        np.sqrt(rho, out=rho)
        if max(self.rx, self.ry) > 1.7 * min(self.rx, self.ry):   # elongated: normalise by the gradient
            e = 1e-4
            g = np.sqrt((u / self.rx) ** 2 + (v / self.ry) ** 2) + e / min(self.rx, self.ry)
            scale = (rho + e) / g
        else:
            scale = np.float32(math.sqrt(self.rx * self.ry))
        rad: np.ndarray | float = 1.0
        if self.harm or self.spikes:   # radius as a function of angle, through a 1-D lookup table
            pa = u / (np.abs(u) + np.abs(v) + np.float32(1e-12))     # branch-free pseudo-angle in [-2, 2]
            np.subtract(np.float32(1.0), pa, out=pa)
            np.copysign(pa, v, out=pa)
            pa += np.float32(2.0)
            pa *= np.float32(_LUT_N / 4)
            rad = self.radius_table()[pa.astype(np.int32)]
        d = np.subtract(rad, rho, out=rho)
        d *= scale
        return d


def _upsample2(c: np.ndarray, h: int, w: int) -> np.ndarray:
    """Bilinear 2x upsampling of samples taken at x + 0.5 = -1, 1, 3, ... (same in y)."""
    a = np.empty((c.shape[0], 2 * c.shape[1] - 4), np.float32)
    a[:, 0::2] = 0.25 * c[:, :-2] + 0.75 * c[:, 1:-1]
    a[:, 1::2] = 0.75 * c[:, 1:-1] + 0.25 * c[:, 2:]
    out = np.empty((2 * c.shape[0] - 4, a.shape[1]), np.float32)
    out[0::2] = 0.25 * a[:-2] + 0.75 * a[1:-1]
    out[1::2] = 0.75 * a[1:-1] + 0.25 * a[2:]
    return out[:h, :w]


def blur(a: np.ndarray, sigma: float) -> np.ndarray:
    """Separable Gaussian blur with edge padding."""
    r = max(1, int(3 * sigma + 0.5))
    k = np.exp(-0.5 * (np.arange(-r, r + 1) / sigma) ** 2).astype(np.float32)
    k /= k.sum()
    for axis in (0, 1):
        p = np.pad(a, [(r, r) if ax == axis else (0, 0) for ax in (0, 1)], mode="edge")
        n = a.shape[axis]
        a = sum(k[i] * (p[i:i + n] if axis == 0 else p[:, i:i + n]) for i in range(2 * r + 1))
    return a


def smooth_noise(rng: np.random.Generator, h: int, w: int, cell: float) -> np.ndarray:
    """Zero-mean, unit-std smooth noise with features about `cell` pixels wide."""
    a = rng.standard_normal((int(h / cell) + 3, int(w / cell) + 3)).astype(np.float32)
    out = np.asarray(Image.fromarray(a).resize((w, h), Image.BICUBIC), dtype=np.float32)
    return (out - out.mean()) / (out.std() + 1e-6)


def wobble(rng: np.random.Generator, n: int = 2, amp: float = 0.04, kmax: int = 4) -> tuple:
    return tuple((int(k), float(rng.uniform(-amp, amp)), float(rng.uniform(0, TAU)))
                 for k in rng.integers(2, kmax + 1, n))


class Canvas:
    """Float image plus the visible mask of every organ drawn so far."""

    def __init__(self, w, h, sp, tissues, *, bx, by, ax, ay, k):
        self.w, self.h, self.sp, self.T = w, h, sp, tissues
        self.bx, self.by, self.ax, self.ay, self.k = bx, by, ax, ay, k
        self.img = np.full((h, w), tissues["air"], np.float32)
        self.organs: dict[str, np.ndarray] = {}
        self.containers: set[str] = set()
        self._xs = np.arange(w, dtype=np.float32) + 0.5
        self._ys = np.arange(h, dtype=np.float32) + 0.5
        self._cache: dict[Part, np.ndarray] = {}

    def sdf(self, p: Part, sl) -> np.ndarray:
        """p's distance field on window `sl`; large shapes are evaluated once on the full image."""
        if p in self._cache:
            return self._cache[p][sl]
        if p.reach() * 2 > 0.4 * min(self.w, self.h):
            # smooth and large: evaluate on a half-resolution grid, upsample bilinearly
            xs = np.arange(-1, self.w + 3, 2, dtype=np.float32)[None, :]
            ys = np.arange(-1, self.h + 3, 2, dtype=np.float32)[:, None]
            self._cache[p] = _upsample2(p.sdf(xs, ys), self.h, self.w)
            return self._cache[p][sl]
        return p.sdf(self._xs[sl[1]][None, :], self._ys[sl[0]][:, None])

    # geometry helpers: body-normalised position, millimetres scaled to this patient
    def X(self, u): return self.bx + u * self.ax
    def Y(self, v): return self.by + v * self.ay
    def mm(self, x): return x * self.k / self.sp

    def P(self, cx, cy, rx, ry, rot_deg=0.0, harm=()) -> Part:
        return Part(float(cx), float(cy), float(rx), float(ry), math.radians(rot_deg), harm)

    def at(self, u, v, su, sv, rot_deg=0.0, harm=()) -> Part:
        return self.P(self.X(u), self.Y(v), su * self.ax, sv * self.ay, rot_deg, harm)

    def window(self, parts, pad):
        x0 = min(p.cx - p.reach() for p in parts) - pad
        x1 = max(p.cx + p.reach() for p in parts) + pad
        y0 = min(p.cy - p.reach() for p in parts) - pad
        y1 = max(p.cy + p.reach() for p in parts) + pad
        cl = lambda v, hi: int(min(max(v, 0), hi))  # noqa: E731
        return (slice(cl(math.floor(y0), self.h), cl(math.ceil(y1) + 1, self.h)),
                slice(cl(math.floor(x0), self.w), cl(math.ceil(x1) + 1, self.w)))

    def field(self, parts, clip=(), minus=(), pad=2.0):
        """Union of `parts`, intersected with each of `clip`, minus each of `minus`."""
        sl = self.window(parts, pad)
        d = self.sdf(parts[0], sl)
        for p in parts[1:]:
            d = np.maximum(d, self.sdf(p, sl))
        for p in clip:
            d = np.minimum(d, self.sdf(p, sl))
        for p in minus:
            d = np.minimum(d, -self.sdf(p, sl))
        return sl, d

    def paint(self, parts, value, *, soft=0.7, organ=None, clip=(), minus=(), container=False, alpha=1.0):
        value = self.T[value] if isinstance(value, str) else value
        sl, d = self.field(parts, clip, minus, pad=soft + 1.0)
        a = d * np.float32(1.0 / soft)
        a += 0.5
        np.clip(a, 0.0, 1.0, out=a)
        if alpha != 1.0:
            a *= np.float32(alpha)
        reg = self.img[sl]
        t = np.float32(value) - reg
        t *= a
        reg += t
        if organ:
            self.mark(organ, sl, d > 0, container)
        return sl, d

    def mark(self, name, sl, m, container=False):
        if not container:
            for other, om in self.organs.items():
                if other != name and other not in self.containers:
                    om[sl] &= ~m
        full = self.organs.setdefault(name, np.zeros((self.h, self.w), bool))
        full[sl] |= m
        if container:
            self.containers.add(name)


def _spine(c: Canvas, cx, cy, rb):
    """Vertebra (body, arch, processes) with spinal canal; returns the vertebral body part."""
    body = c.P(cx, cy, c.mm(rb * 1.1), c.mm(rb))
    canal = c.P(cx, cy + body.ry + c.mm(8), c.mm(9), c.mm(8))
    arch = canal.grow(c.mm(5))
    spinous = c.P(cx, arch.cy + arch.ry + c.mm(8), c.mm(4), c.mm(11))
    trans = [c.P(cx + s * c.mm(22), arch.cy - c.mm(3), c.mm(12), c.mm(4), s * 15) for s in (-1, 1)]
    c.paint([body, arch, spinous, *trans], "bone_cortex", organ="vertebra", minus=[canal])
    c.paint([body.grow(-c.mm(2.5)), *(t.grow(-c.mm(1.5)) for t in trans)], "bone_marrow")
    c.paint([canal], "csf")
    return body


def build_abdomen(c: Canvas, g: np.random.Generator, r: np.random.Generator):
    J = lambda s=0.025: float(r.normal(0, s))  # noqa: E731 - slice-to-slice jitter
    body = c.at(0, 0, 1, 1, harm=wobble(g, 2, 0.02))
    c.paint([body], "fat", organ="body", container=True, soft=0.8)
    cav = c.at(0, 0.04, 0.85, 0.80, harm=wobble(g, 2, 0.025))
    c.paint([c.at(0, 0.01, 0.93, 0.91, harm=body.harm)], "muscle", minus=[cav])
    c.paint([cav], "visceral_fat")
    for _ in range(int(r.integers(8, 15))):  # bowel loops, some with gas
        rr = c.mm(r.uniform(7, 14))
        loop = c.P(c.X(r.uniform(-0.35, 0.65)), c.Y(r.uniform(-0.7, 0.3)), rr, rr * r.uniform(0.6, 1.0),
                   r.uniform(0, 180))
        c.paint([loop], "bowel", clip=[cav])
        if r.random() < 0.45:
            c.paint([loop.grow(-loop.ry * 0.4)], "gas", clip=[cav])
    vb_cy = c.Y(0.38 + J(0.01))
    for s in (-1, 1):  # paraspinal muscles
        c.paint([c.P(c.bx + s * c.mm(32), vb_cy + c.mm(46), c.mm(24), c.mm(18), -s * 10)], "muscle",
                clip=[body.grow(-c.mm(6))])
    liver = [c.at(-0.42 + J(), -0.02 + J(), 0.47, 0.70, g.uniform(-10, 10), wobble(g)),
             c.at(0.02 + J(), -0.42 + J(), 0.30, 0.22, g.uniform(-15, 5), wobble(g))]
    c.paint(liver, "liver", organ="liver", clip=[cav])
    for _ in range(int(r.integers(3, 7))):  # hepatic / portal vein branches
        a = r.uniform(0, TAU)
        ves = c.P(liver[0].cx + liver[0].rx * 0.5 * math.cos(a), liver[0].cy + liver[0].ry * 0.5 * math.sin(a),
                  c.mm(r.uniform(2, 4)), c.mm(r.uniform(3, 9)), r.uniform(0, 180))
        c.paint([ves], "vessel", soft=1.2, clip=[cav], alpha=0.8)
    if r.random() < 0.5:
        gb = c.P(c.X(-0.2 + J()), c.Y(-0.22 + J()), c.mm(17), c.mm(12), r.uniform(-40, 40))
        c.paint([gb], "bile", organ="gallbladder", clip=[cav])
    spleen = c.P(c.X(0.66 + J()), c.Y(0.3 + J()), c.mm(27), c.mm(55), -35 + g.uniform(-10, 10), wobble(g))
    c.paint([spleen], "spleen", organ="spleen", clip=[cav])
    st = c.P(c.X(0.32 + J()), c.Y(-0.34 + J()), c.mm(45), c.mm(32), g.uniform(10, 30), wobble(g, 2, 0.05))
    c.paint([st], "stomach_wall", organ="stomach", clip=[cav])
    lumen = st.grow(-c.mm(4))
    c.paint([lumen], "fluid", clip=[cav])
    level = lumen.cy - lumen.ry * r.uniform(0.1, 0.6)  # gas above a flat air-fluid level
    c.paint([lumen], "gas", clip=[cav, Part(lumen.cx, level - 5000, 5000, 5000)])
    for s, name in ((-1, "right kidney"), (1, "left kidney")):
        kid = c.P(c.bx + s * c.mm(68) + c.ax * J(), vb_cy + c.mm(6), c.mm(30), c.mm(21), 45 * s, wobble(g, 2, 0.03))
        c.paint([kid], "kidney", organ=name, clip=[cav])
        c.paint([c.P(kid.cx - s * c.mm(9), kid.cy - c.mm(5), c.mm(11), c.mm(6), 45 * s)], "renal_sinus",
                clip=[kid.grow(-c.mm(3))])
    vb = _spine(c, c.bx, vb_cy, 20)
    c.paint([c.P(c.bx + c.mm(14), vb.cy - vb.ry - c.mm(14), c.mm(11), c.mm(11))], "artery", organ="aorta")
    c.paint([c.P(c.bx - c.mm(24), vb.cy - vb.ry - c.mm(18), c.mm(13), c.mm(9), 20)], "vein",
            organ="inferior vena cava")


def lung_vessels(c: Canvas, r: np.random.Generator, lm: np.ndarray, hx: float, hy: float, spread: float):
    """Vessels inside the lung mask `lm`: short radial segments from the hilum (hx, hy), denser and
    thicker towards it (`spread`: pixels over which the density falls off)."""
    ys, xs = np.nonzero(lm)
    if not len(xs):
        return
    dist = np.hypot(xs - hx, ys - hy)
    wts = np.exp(-dist / spread)
    idx = r.choice(len(xs), int(r.integers(45, 80)), p=wts / wts.sum())
    ang = np.arctan2(ys[idx] - hy, xs[idx] - hx)[:, None] + r.normal(0, 0.15, (len(idx), 1))
    steps = np.arange(6)[None, :] * r.uniform(0.0, 1.0, (len(idx), 1))
    px = np.clip(np.rint(xs[idx][:, None] + steps * np.cos(ang)), 0, c.w - 1).astype(int)
    py = np.clip(np.rint(ys[idx][:, None] + steps * np.sin(ang)), 0, c.h - 1).astype(int)
    near = np.exp(-dist[idx] / (1.15 * spread))[:, None]
    amp = (r.uniform(0.25, 0.7, (len(idx), 1)) * (0.5 + near)).astype(np.float32)
    acc = np.zeros_like(c.img)
    np.add.at(acc, (py.ravel(), px.ravel()), np.broadcast_to(amp, px.shape).ravel())
    c.img += np.minimum(blur(acc, 0.7), 0.35) * lm * np.float32(2.6 * (c.T["vessel"] - c.T["lung"]))


def build_chest(c: Canvas, g: np.random.Generator, r: np.random.Generator):
    J = lambda s=0.02: float(r.normal(0, s))  # noqa: E731
    body = c.at(0, 0, 1, 1, harm=wobble(g, 2, 0.02))
    c.paint([body], "fat", organ="body", container=True, soft=0.8)
    cav = c.at(0, 0.03, 0.83, 0.78, harm=wobble(g, 2, 0.02))
    c.paint([c.at(0, 0.0, 0.92, 0.89, harm=body.harm)], "muscle", minus=[cav])
    for s in (-1, 1):  # ribs along the inner chest wall
        for phi in np.radians([-62, -38, -14, 10, 34, 58]) + J(0.05):
            x, y = cav.cx + s * cav.rx * 1.03 * math.cos(phi), cav.cy + cav.ry * 1.03 * math.sin(phi)
            tang = math.degrees(math.atan2(cav.ry * math.cos(phi), -s * cav.rx * math.sin(phi)))
            c.paint([c.P(x, y, c.mm(7), c.mm(4), tang)], "bone_cortex", soft=0.6)
    c.paint([cav], "visceral_fat")
    heart = c.P(c.X(0.12 + J()), c.Y(-0.1 + J()), c.mm(60), c.mm(45), -30 + g.uniform(-8, 8), wobble(g, 2, 0.03))
    vb = _spine(c, c.bx, c.Y(0.45 + J(0.01)), 17)
    med = c.at(0, 0.08, 0.11, 0.95)
    pvs = c.P(c.bx, vb.cy + c.mm(12), c.mm(34), c.mm(42))
    for s, name, v in ((-1, "right lung", 0.40), (1, "left lung", 0.38)):
        lung = c.at(s * 0.45 + J(), 0.04 + J(), v, 0.78, harm=wobble(g, 2, 0.03))
        c.paint([lung], "lung", organ=name, clip=[cav], minus=[med, heart.grow(c.mm(5)), pvs])
    lm = c.organs["right lung"] | c.organs["left lung"]
    c.img += lm * np.float32(40.0 / c.ay) * (c._ys[:, None] - np.float32(c.by))  # dependent density
    lung_vessels(c, r, lm, c.bx, c.Y(0.0), 0.3 * c.ax)
    c.paint([heart.grow(c.mm(3))], "visceral_fat", minus=[heart])
    c.paint([heart], "heart", organ="heart")
    c.paint([c.P(c.bx + c.mm(24), vb.cy - vb.ry - c.mm(14), c.mm(12), c.mm(12))], "artery", organ="aorta")
    c.paint([c.P(c.bx + c.mm(4), vb.cy - vb.ry - c.mm(10), c.mm(7), c.mm(5))], "muscle")  # oesophagus
    st = c.P(c.bx, c.Y(-0.86), c.mm(14), c.mm(6))
    c.paint([st], "bone_cortex", organ="sternum")
    c.paint([st.grow(-c.mm(2))], "bone_marrow")


def paint_brain(c: Canvas, r: np.random.Generator, inner: Part) -> Part:
    """Grey matter inside the skull's inner table, white matter and sulci (every plane uses it)."""
    brain = inner.grow(-c.mm(1.5))
    c.paint([brain], "gm", organ="brain")
    wm = brain.grow(-c.mm(4))._replace(harm=brain.harm + tuple(
        (int(k), float(r.uniform(0.01, 0.03)), float(r.uniform(0, TAU))) for k in r.integers(10, 22, 4)))
    c.paint([wm], "wm", soft=1.3)
    sl, d = c.field([brain])
    band = (d > 0) & (d < c.mm(6))
    n = smooth_noise(r, c.h, c.w, max(2.0, c.mm(3)))[sl]
    c.img[sl] += (c.T["csf"] - c.img[sl]) * np.clip((n - 1.0) * 1.5, 0, 0.6) * band   # sulci
    return brain


def build_head(c: Canvas, g: np.random.Generator, r: np.random.Generator):
    J = lambda s=0.02: float(r.normal(0, s))  # noqa: E731
    head = c.at(0, 0, 1, 1, harm=((1, float(g.uniform(0.01, 0.04)), -math.pi / 2), *wobble(g, 1, 0.02)))
    c.paint([head], "scalp", organ="head", container=True, soft=0.8)
    outer, inner = head.grow(-c.mm(5)), head.grow(-c.mm(12))
    c.paint([outer], "skull", organ="skull", minus=[inner], soft=0.6)
    c.paint([outer.grow(-c.mm(2))], "diploe", minus=[inner.grow(c.mm(2))])
    c.paint([inner], "csf")
    brain = paint_brain(c, r, inner)
    for sgn in (-1, 1):  # interhemispheric fissure with the falx
        fis = c.P(c.bx, brain.cy + sgn * brain.ry * 0.62, 0.9, brain.ry * 0.4)
        c.paint([fis], "csf", clip=[brain], soft=0.6)
        c.paint([fis._replace(rx=0.45)], "falx", clip=[brain], soft=0.4)
    dy = c.mm(-6) + c.ay * J()
    vents = []
    for s in (-1, 1):
        vents.append(c.P(c.bx + s * c.mm(8), c.by + dy, c.mm(5), c.mm(24), s * 10, wobble(g, 1, 0.05)))
        vents.append(c.P(c.bx + s * c.mm(14), c.by + dy + c.mm(28), c.mm(6), c.mm(13), -s * 30))
    c.paint(vents, "csf", organ="lateral ventricles", clip=[brain])
    arteries = [c.P(c.bx + s * brain.rx * 0.62, c.by + dy + c.mm(16), c.mm(1.6), c.mm(7), s * 75) for s in (-1, 1)]
    arteries += [c.P(c.bx + s * c.mm(2.5), brain.cy - brain.ry * 0.5, c.mm(1.4), c.mm(5)) for s in (-1, 1)]
    c.paint(arteries, "artery", clip=[brain], soft=0.8)
    c.paint([c.P(c.bx, brain.cy + brain.ry - c.mm(2.5), c.mm(4), c.mm(3))], "vein", soft=0.8)


AXIAL_BUILDERS = {"ABDOMEN": build_abdomen, "CHEST": build_chest, "HEAD": build_head}
