"""What the scanner and the pathology add on top of the anatomy: lesion enhancement and grade texture,
motion artifact and noise. Every effect here is rendered, so each ground-truth label has a pixel
correlate a reader can see (tests/annotation/test_phantoms_*.py measure each one):

- enhancement (contrast CT only): 'homogeneous' raises the whole lesion, 'rim' a peripheral ring,
  'heterogeneous' blotches (never a necrotic/fatty core), 'non-enhancing' nothing — while the organ
  around it enhances per `CT_PHASE_TISSUES`. A hypodense lesion stays clearly below its organ.
- grade: internal heterogeneity (smooth texture at the lesion's scale) rising from grade 1
  (homogeneous) to grade 3.
- severity: the lesion's measured diameter within its type's size range (SEVERITY_CUTS).
- motion artifact: blur and ghost replicas of the body along the phase-encode direction (MR: periodic
  ghosts across the field of view; CT: a displaced double contour).
- excessive image noise: noise sigma NOISE_FACTOR times the normal one.
"""
from __future__ import annotations

import numpy as np

from .anatomy import smooth_noise
from .catalogue import SEVERITIES

NOISE_FACTOR = 3.0
# enhancement amplitude (HU) per phase and pattern before the hypodense cap
_ENH_AMP = {"arterial phase": {"homogeneous enhancement": 55.0, "rim enhancement": 85.0,
                               "heterogeneous enhancement": 70.0},
            "portal venous phase": {"homogeneous enhancement": 48.0, "rim enhancement": 75.0,
                                    "heterogeneous enhancement": 60.0}}
_GRADE_TEXTURE = {"CT": (0.0, 11.0, 26.0), "MR": (0.0, 170.0, 400.0)}   # std of the texture per grade


SEVERITY_CUTS = (0.30, 0.55)   # fractions of the type's size range (measured diameters run small: a
                               # lesion shrinks to fit its organ, an oval's longest side is its drawn size)


def severity_for(diameter_mm: float, d_min: float, d_max: float) -> str:
    """Where the measured diameter falls in the type's size range: 'mild' below 30 %, 'moderate' below
    55 %, else 'severe' (cuts near the tertiles of the measured diameters)."""
    frac = (diameter_mm - d_min) / max(d_max - d_min, 1e-6)
    return SEVERITIES[int(np.searchsorted(SEVERITY_CUTS, frac, side="right"))]


def grade_texture(r: np.random.Generator, modality: str, grade: str, alpha: np.ndarray, radius: float) -> np.ndarray:
    """Zero-mean (inside the lesion) texture to add to the lesion window; zeros for grade 1."""
    amp = _GRADE_TEXTURE[modality][int(grade[-1]) - 1]
    if amp == 0 or alpha.size == 0:
        return np.zeros_like(alpha)
    h, w = alpha.shape
    tex = smooth_noise(r, h, w, max(1.5, radius / 2.5))
    inside = alpha > 0.5
    if inside.any():
        tex -= tex[inside].mean()
    return tex * np.float32(amp) * alpha


def enhancement_map(r: np.random.Generator, kind: str, alpha: np.ndarray, d: np.ndarray, radius: float,
                    core_alpha: np.ndarray | None) -> np.ndarray:
    """Where (0..1) a lesion takes up contrast, on the lesion window."""
    if kind == "non-enhancing" or alpha.size == 0:
        return np.zeros_like(alpha)
    if kind == "rim enhancement":
        rim = max(1.3, 0.22 * radius)
        e = alpha * np.clip((rim - d) / 0.8 + 0.5, 0, 1)
    elif kind == "heterogeneous enhancement":
        blotch = smooth_noise(r, *alpha.shape, max(1.5, radius / 2.0))
        e = alpha * np.clip(0.45 + 0.55 * blotch, 0, 1)
    else:
        e = alpha.copy()
    if core_alpha is not None and kind != "rim enhancement":
        e *= 1 - core_alpha                   # necrosis, fat and cavities never enhance
    return e.astype(np.float32)


def enhancement_amplitude(phase: str, kind: str, *, hypodense: bool, lesion_mean: float, organ_value: float,
                          map_mean: float) -> float:
    """HU added where the map is 1. A hypodense lesion keeps at least half of its contrast against the
    enhanced organ (and 12 HU), so 'hypodense' stays true of the pixels."""
    amp = _ENH_AMP[phase][kind]
    if hypodense and map_mean > 0:
        gap = max(12.0, 0.5 * (organ_value - lesion_mean))
        amp = min(amp, (organ_value - gap - lesion_mean) / map_mean)
    return max(amp, 0.0)


def phase_encode_axis(plane: str, region: str) -> int:
    """0: vertical (antero-posterior on axial body images), 1: horizontal."""
    return 0 if plane == "axial" and region != "HEAD" else 1


def _blur_axis(a: np.ndarray, sigma: float, axis: int) -> np.ndarray:
    r = max(1, int(3 * sigma + 0.5))
    k = np.exp(-0.5 * (np.arange(-r, r + 1) / sigma) ** 2).astype(np.float32)
    k /= k.sum()
    pad = [(r, r) if ax == axis else (0, 0) for ax in (0, 1)]
    p = np.pad(a, pad, mode="edge")
    n = a.shape[axis]
    return sum(k[i] * (p[i:i + n] if axis == 0 else p[:, i:i + n]) for i in range(2 * r + 1))


def motion(img: np.ndarray, r: np.random.Generator, *, modality: str, axis: int, background: float,
           shift_px: float, window: tuple[float, float] | None = None) -> np.ndarray:
    """Blur plus ghost replicas of the object along `axis` (the background level is kept).

    MR: respiratory/pulsation ghosts, periodic across the field of view. CT: a strong directional blur
    and a displaced faint copy of what the display window shows (bone and air clipped to the window,
    so a ghost of the skull cannot turn a hypodense lesion bright)."""
    obj = img - np.float32(background)
    if modality == "MR":
        obj = _blur_axis(obj, float(r.uniform(1.8, 2.6)), axis)
        step = int(img.shape[axis] / r.integers(3, 5))
        out = obj.copy()
        for k, a in ((1, 0.05), (2, 0.02)):
            for sgn in (-1, 1):
                out += np.float32(a * r.uniform(0.8, 1.2)) * np.roll(obj, sgn * k * step, axis)
        return out + np.float32(background)
    blurred = _blur_axis(img, float(r.uniform(2.0, 3.0)), axis)
    lo, hi = window if window is not None else (-np.inf, np.inf)
    s = int(round(shift_px)) * (1 if r.random() < 0.5 else -1)
    a = np.float32(r.uniform(0.13, 0.17))
    return (1 - a) * blurred + a * np.roll(np.clip(blurred, lo, hi), s, axis)
