"""Phantom dataclasses and the deterministic generator (pure Python: numpy, Pillow, pydicom)."""
from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image

from . import acquisition as acq, catalogue as cat
from .anatomy import AXIAL_BUILDERS, Canvas, Part, blur, smooth_noise
from .anatomy_planes import PLANE_BUILDERS
from .dicom import phantom_to_dicom, phantom_uids

IMAGES_PER_PATIENT = 2
_PATIENT_TAG = 0x50415431   # keeps the patient stream apart from the per-image stream
_PROTOCOL_TAG = 0x50524F54  # patient-level acquisition protocol: plane, contrast phase / sequence
_QUALITY_TAG = 0x51554C54   # image-level: image quality, side of a sagittal section
_BODY_SIZES = ((320, 256), (352, 288), (320, 240), (384, 288), (288, 224))
_HEAD_SIZES = ((256, 320), (240, 288), (256, 304), (224, 288))


@dataclass(frozen=True)
class Lesion:
    label: str
    organ: str
    box: tuple[int, int, int, int]     # (x0, y0, x1, y1), x1/y1 exclusive, tight around the mask
    center: tuple[float, float]        # mask centroid (x, y) in the same continuous frame as box
    diameter_mm: float                 # longest box side of the lesion core (spicules excluded)
    shape: str
    margin: str
    density: str
    composition: str
    lesion_class: str
    diagnosis: str
    severity: str = "mild"             # diameter tertile within the type's size range
    enhancement: str | None = None     # contrast-enhanced CT only (else absent from the ground truth)
    grade: str | None = None           # malignant lesions only

    def ground_truth(self) -> dict:
        out = {**asdict(self), "box": list(self.box), "center": list(self.center)}
        return {k: v for k, v in out.items() if v is not None}


@dataclass(frozen=True, eq=False)
class Phantom:
    index: int
    seed: int
    modality: str
    body_region: str
    plane: str
    patient_key: str
    width: int
    height: int
    pixel_spacing_mm: float
    pixels: np.ndarray = field(repr=False)
    organs: dict[str, tuple[int, int, int, int]]
    lesions: tuple[Lesion, ...]
    window_center: float
    window_width: float
    contrast_phase: str = ""           # CT: cat.CT_PHASES; MR: cat.MR_SEQUENCES
    image_quality: str = "no limiting artifact"   # cat.IMAGE_QUALITIES
    instance_number: int = 1           # position of this image within its patient's series
    slice_location_mm: float = 0.0
    slice_thickness_mm: float = 5.0
    patient_sex: str = "O"
    patient_age: int = 50
    organ_masks: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    lesion_masks: tuple[np.ndarray, ...] = field(default=(), repr=False)

    @property
    def acquisition(self) -> str:
        """Former name of `contrast_phase`."""
        return self.contrast_phase

    @property
    def patient_number(self) -> int:
        return self.index // IMAGES_PER_PATIENT

    def to_dicom_bytes(self) -> bytes:
        return phantom_to_dicom(self)

    def ground_truth(self) -> dict:
        return {
            "format": "medr2-phantom/1",
            "index": self.index, "seed": self.seed, "modality": self.modality,
            "body_region": self.body_region, "plane": self.plane, "patient_key": self.patient_key,
            "width": self.width, "height": self.height, "pixel_spacing_mm": self.pixel_spacing_mm,
            "window_center": self.window_center, "window_width": self.window_width,
            "contrast_phase": self.contrast_phase, "acquisition": self.contrast_phase,
            "image_quality": self.image_quality, "instance_number": self.instance_number,
            "slice_location_mm": self.slice_location_mm, "slice_thickness_mm": self.slice_thickness_mm,
            "patient_sex": self.patient_sex, "patient_age": self.patient_age,
            "pixel_unit": "HU" if self.modality == "CT" else "arbitrary",
            "uids": phantom_uids(self),
            "organs": {k: list(v) for k, v in self.organs.items()},
            "abnormal": bool(self.lesions), "lesion_count": len(self.lesions),
            "lesions": [les.ground_truth() for les in self.lesions],
        }


def mask_box(mask: np.ndarray) -> tuple[int, int, int, int] | None:
    """Tight (x0, y0, x1, y1) box of a boolean mask, x1/y1 exclusive; None when empty."""
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    if not len(rows):
        return None
    return int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1


def _lesion_part(rng, shape, margin, cx, cy, r) -> Part:
    rot, harm, spikes, ry = float(rng.uniform(0, math.pi)), (), (), r
    if shape == "oval":
        ry = r * rng.uniform(0.55, 0.75)
    elif shape == "lobulated":
        ry = r * rng.uniform(0.8, 1.0)
        k = int(rng.integers(3, 7))
        harm = ((k, float(rng.uniform(0.07, 0.12)), float(rng.uniform(0, 6.3))),
                (k + int(rng.integers(1, 3)), float(rng.uniform(0.03, 0.06)), float(rng.uniform(0, 6.3))))
    elif shape == "irregular":
        ry = r * rng.uniform(0.7, 0.95)
        harm = tuple((int(k), float(rng.uniform(0.04, 0.11)), float(rng.uniform(0, 6.3)))
                     for k in rng.choice(np.arange(2, 8), 3, replace=False))
    if margin == "spiculated":
        spikes = tuple((float(rng.uniform(0, 6.3)), float(rng.uniform(0.35, 0.8)), float(rng.uniform(0.05, 0.1)))
                       for _ in range(int(rng.integers(8, 15))))
    return Part(float(cx), float(cy), float(r), float(ry), rot, harm, spikes)


def _pick(rng, pairs):
    """Weighted choice from ((value, weight), ...)."""
    wts = np.array([w for _, w in pairs], float)
    return pairs[int(rng.choice(len(pairs), p=wts / wts.sum()))][0]


def _place_lesions(c: Canvas, rng, modality: str, region: str, count: int, phase: str):
    """Paint up to `count` non-overlapping lesions inside their organs; returns (Lesion, mask) pairs."""
    organs = [(o, w) for o, w in cat.LESION_ORGANS[region] if o in c.organs and c.organs[o].sum() > 50]
    out, taken = [], np.zeros((c.h, c.w), bool)
    organ_value: dict[str, float] = {}   # clean (lesion-free) organ median, the reference for contrast
    enhanced = modality == "CT" and phase in cat.ENHANCED_PHASES
    for _ in range(count if organs else 0):
        organ = _pick(rng, organs)
        if organ not in organ_value:
            organ_value[organ] = float(np.median(c.img[c.organs[organ]]))
        types = cat.CATALOGUE[(modality, cat.organ_group(organ))]
        lt = _pick(rng, [(t, t.weight) for t in types])
        value, core_value, density = lt.value, lt.core, lt.density
        if modality == "MR" and phase == "T1-weighted":
            value, core_value, density = lt.t1
        shape, margin = str(rng.choice(lt.shapes)), str(rng.choice(lt.margins))
        grade = str(rng.choice(lt.grades)) if lt.grades else None
        pick = int(rng.integers(max(len(lt.enhancement), 1)))   # drawn on every scan: streams stay aligned
        enhancement = lt.enhancement[pick] if enhanced else None
        tex_rng = np.random.default_rng(int(rng.integers(2 ** 32)))   # textures never shift the main stream
        r = max(c.mm(rng.uniform(lt.d_min, lt.d_max)) / c.k / 2, 1.6)   # lesion size is not body-scaled
        allowed = c.organs[organ] & ~taken
        ys, xs = np.nonzero(allowed)
        placed = None
        for attempt in range(36):
            if not len(xs):
                break
            if attempt and attempt % 12 == 0:
                r = max(r * 0.7, 1.6)
            i = int(rng.integers(len(xs)))
            part = _lesion_part(rng, shape, margin, xs[i] + rng.uniform(0, 1), ys[i] + rng.uniform(0, 1), r)
            soft = float(np.clip(0.3 * r, 1.5, 5.0)) if margin == "ill-defined" else 0.6
            pad = 1.5 + (soft / 2 if margin == "ill-defined" else 0)
            sl, d = c.field([part], pad=pad + 2)
            if d.size and not (d > -pad)[~allowed[sl]].any():
                placed = part, soft, sl, d
                break
        if placed is None:
            continue
        part, soft, sl, d = placed
        reg = c.img[sl]
        alpha = np.clip(d / soft + 0.5, 0, 1)
        reg += (np.float32(value) - reg) * alpha
        core_alpha = None
        if core_value is not None:
            core = part._replace(rx=part.rx * 0.5, ry=part.ry * 0.5, spikes=())
            dc = core.sdf(c._xs[sl[1]][None, :], c._ys[sl[0]][:, None])
            core_alpha = np.clip(dc / max(soft, 1.0) + 0.5, 0, 1)
            reg += (np.float32(core_value) - reg) * core_alpha
        mask = np.zeros((c.h, c.w), bool)
        mask[sl] = d > 0
        inside = d > 0
        if grade is not None:
            outside_core = 1 - core_alpha if core_alpha is not None else 1
            reg += acq.grade_texture(tex_rng, modality, grade, alpha * outside_core, part.rx)
        if enhancement is not None:
            emap = acq.enhancement_map(tex_rng, enhancement, alpha, d, part.rx, core_alpha)
            amp = acq.enhancement_amplitude(
                phase, enhancement, hypodense=density == "hypodense", lesion_mean=float(reg[inside].mean()),
                organ_value=organ_value[organ], map_mean=float(emap[inside].mean())) if emap.any() else 0.0
            reg += emap * np.float32(amp)
        taken[sl] |= d > -2.5
        core_mask = np.zeros_like(mask)
        core_mask[sl] = part._replace(spikes=()).sdf(c._xs[sl[1]][None, :], c._ys[sl[0]][:, None]) > 0
        cb = mask_box(core_mask) or mask_box(mask)
        diameter = round(float(max(cb[2] - cb[0], cb[3] - cb[1]) * c.sp), 1)
        label = lt.label if lt.label != "auto" else ("mass" if diameter >= 30 else "nodule")
        yy, xx = np.nonzero(mask)
        out.append((Lesion(label, organ, mask_box(mask), (round(float(xx.mean()) + 0.5, 2),
                    round(float(yy.mean()) + 0.5, 2)), diameter, shape, margin, density,
                    lt.composition, lt.lesion_class, lt.diagnosis,
                    severity=acq.severity_for(diameter, lt.d_min, lt.d_max), enhancement=enhancement,
                    grade=grade), mask))
    return out


def _patient_key(seed: int, number: int) -> str:
    return f"PHANTOM-{number:04d}" if seed == 0 else f"PHANTOM-S{seed}-{number:04d}"


def generate_phantom(index: int, *, seed: int = 0, modality: str | None = None, plane: str | None = None,
                     contrast_phase: str | None = None, image_quality: str | None = None) -> Phantom:
    """One phantom, fully determined by (seed, index[, overrides]).

    The overrides replace a drawn value without shifting any random stream, so e.g. the same phantom
    rendered with `contrast_phase="non-contrast"` and `"portal venous phase"` has the same anatomy and
    the same lesions (what the tests use to measure each label's visual correlate)."""
    if index < 0:
        raise ValueError("index must be >= 0")
    if modality is not None:
        modality = modality.upper()
        if modality not in ("CT", "MR"):
            raise ValueError(f"unsupported modality {modality!r} (CT or MR)")
    if plane is not None and plane not in cat.PLANES:
        raise ValueError(f"unsupported plane {plane!r} (one of {', '.join(cat.PLANES)})")
    if image_quality is not None and image_quality not in cat.IMAGE_QUALITIES:
        raise ValueError(f"unsupported image quality {image_quality!r} (one of {', '.join(cat.IMAGE_QUALITIES)})")
    if contrast_phase is not None and contrast_phase not in cat.CT_PHASES + cat.MR_SEQUENCES:
        raise ValueError(f"unsupported contrast phase {contrast_phase!r} "
                         f"(CT: {', '.join(cat.CT_PHASES)}; MR: {', '.join(cat.MR_SEQUENCES)})")
    number = index // IMAGES_PER_PATIENT
    g = np.random.default_rng([seed, number, _PATIENT_TAG])    # patient-level: shared by the series
    p = np.random.default_rng([seed, number, _PROTOCOL_TAG])   # patient-level acquisition protocol
    q = np.random.default_rng([seed, index, _QUALITY_TAG])     # image-level acquisition
    r = np.random.default_rng([seed, index])                    # image-level anatomy and lesions
    options = [x for x in cat.REGIONS if modality is None or x[0] == modality]
    cum = np.cumsum([x[2] for x in options])
    mod, region, _ = options[int(np.searchsorted(cum, g.random() * cum[-1], side="right"))]
    drawn_plane = cat.PLANES[int(p.integers(len(cat.PLANES)))]
    plane = plane or drawn_plane
    phase = _pick(p, cat.CONTRAST_PHASES[(mod, region)])
    if contrast_phase is not None:
        if contrast_phase not in (cat.CT_PHASES if mod == "CT" else cat.MR_SEQUENCES):
            raise ValueError(f"contrast phase {contrast_phase!r} does not apply to {mod}")
        phase = contrast_phase
    quality = cat.IMAGE_QUALITIES[int(q.integers(len(cat.IMAGE_QUALITIES)))]
    quality = image_quality or quality
    side = ("right", "left")[int(q.integers(2))] if plane == "sagittal" else None
    sex, age = ("F", "M")[int(g.integers(2))], int(g.integers(25, 86))
    if region == "HEAD":
        w, h = _HEAD_SIZES[int(g.integers(len(_HEAD_SIZES)))]
        width_mm, aspect = g.uniform(138, 158), g.uniform(0.76, 0.84)        # width / AP
        ay = h * g.uniform(0.40, 0.44)
        ax = min(ay * aspect, w * 0.46)
        k = width_mm / 150.0
    else:
        w, h = _BODY_SIZES[int(g.integers(len(_BODY_SIZES)))]
        width_mm = g.uniform(300, 380)
        aspect = g.uniform(1.25, 1.45) if region == "ABDOMEN" else g.uniform(1.35, 1.6)
        ax = w * g.uniform(0.41, 0.45)
        ax = min(ax, h * 0.42 * aspect)
        ay = ax / aspect
        k = width_mm / 340.0
    sp = float(round(width_mm / (2 * ax), 4))
    ax = width_mm / (2 * sp)
    ay = ax / aspect                       # axial section: ax left-right, ay antero-posterior half-extents
    thickness = 5.0
    instance = index % IMAGES_PER_PATIENT + 1
    jitter = r.normal(0, 1.0)
    if plane == "axial":
        by = h / 2 - (0.03 * h if mod == "CT" and region != "HEAD" else 0)
        c = Canvas(w, h, sp, cat.tissues(mod, phase), bx=w / 2 + jitter, by=by, ax=ax, ay=ay, k=k)
        z0 = round(float(g.uniform(-300, 100)), 1)
    else:
        if plane == "sagittal" and region == "HEAD":
            w, h = h, w                    # the antero-posterior head is longer than it is wide
        half = ax if plane == "coronal" else ay
        c = Canvas(w, h, sp, cat.tissues(mod, phase), bx=w / 2 + jitter, by=h / 2, ax=half, ay=h / 2, k=k)
        if plane == "coronal":
            z0 = round(float(g.uniform(-20, 40)), 1)                     # y of the section (posterior +)
        else:                                                            # x of the section (patient left +)
            z0 = round(float(g.uniform(35, 75)) * (-1 if side == "right" else 1), 1)
    if mod == "CT" and region != "HEAD" and plane != "coronal":   # scanner table behind the patient
        body_edge = (c.by + c.ay if plane == "axial" else c.bx + c.ax) + 5
        if plane == "axial":
            t = (c._xs[None, :] - w / 2) / (0.45 * w)
            top = body_edge - 5 * t * t
            c.img[(c._ys[:, None] >= top) & (c._ys[:, None] < top + 3) & (np.abs(t) < 1)] = c.T["table"]
        else:
            c.img[:, (c._xs >= body_edge) & (c._xs < body_edge + 3)] = c.T["table"]
    if plane == "axial":
        AXIAL_BUILDERS[region](c, g, r)
    else:
        PLANE_BUILDERS[(region, plane)](c, g, r, side)
    counts = np.asarray(cat.LESION_COUNT_P)
    found = _place_lesions(c, r, mod, region, int(r.choice(len(counts), p=counts / counts.sum())), phase)
    container = "head" if region == "HEAD" else "body"
    img = blur(c.img, 0.55)
    axis = acq.phase_encode_axis(plane, region)
    noise_k = acq.NOISE_FACTOR if quality == "excessive image noise" else 1.0
    if mod == "CT":
        wc, ww = cat.CT_WINDOWS[region]
        if quality == "motion artifact":
            img = acq.motion(img, q, modality=mod, axis=axis, background=c.T["air"], shift_px=c.mm(9.0) / c.k,
                             window=(wc - ww / 2, wc + ww / 2))
        sigma = {"HEAD": 2.5, "CHEST": 9.0, "ABDOMEN": 8.0}[region] * noise_k
        nz = blur(r.standard_normal(img.shape, dtype=np.float32), 0.6)
        img += nz * (sigma / nz.std()) + smooth_noise(r, h, w, 4.0) * 2.0 * c.organs[container]
        pixels = np.clip(np.rint(img), -1024, 3071).astype(np.int16)
    else:
        img *= 1 + 0.12 * smooth_noise(r, h, w, h / 3.0)     # coil bias field
        if quality == "motion artifact":
            img = acq.motion(img, q, modality=mod, axis=axis, background=0.0, shift_px=0.0)
        s = 28.0 * noise_k
        n1, n2 = r.standard_normal((2, h, w), dtype=np.float32) * np.float32(s)
        img = np.sqrt((img + n1) ** 2 + n2 ** 2)                # Rician magnitude noise
        pixels = np.clip(np.rint(img), 0, 4095).astype(np.uint16)
        lo, hi = np.percentile(pixels[c.organs[container]], [1.0, 99.5])
        wc, ww = float(round((lo + hi) / 2)), float(max(round(hi - lo), 1))
    organs = {n: b for n, m in c.organs.items() if (b := mask_box(m)) is not None}
    return Phantom(
        index=index, seed=seed, modality=mod, body_region=region, plane=plane,
        patient_key=_patient_key(seed, number), width=w, height=h, pixel_spacing_mm=sp, pixels=pixels,
        organs=organs, lesions=tuple(les for les, _ in found), window_center=wc, window_width=ww,
        contrast_phase=phase, image_quality=quality, instance_number=instance,
        slice_location_mm=round(z0 + (instance - 1) * 2 * thickness, 1), slice_thickness_mm=thickness,
        patient_sex=sex, patient_age=age, organ_masks={n: c.organs[n] for n in organs},
        lesion_masks=tuple(m for _, m in found),
    )


def generate_phantoms(count: int, *, seed: int = 0, start: int = 0) -> Iterator[Phantom]:
    """Stream phantoms start .. start+count-1 (CT/MR and body regions mixed deterministically)."""
    for i in range(start, start + count):
        yield generate_phantom(i, seed=seed)


def write_phantoms(out_dir, count: int, *, seed: int = 0, start: int = 0) -> list[Path]:
    """Write phantom-NNNNN.dcm + phantom-NNNNN.json (ground truth) pairs; returns the .dcm paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for ph in generate_phantoms(count, seed=seed, start=start):
        dcm = out / f"phantom-{ph.index:05d}.dcm"
        dcm.write_bytes(ph.to_dicom_bytes())
        dcm.with_suffix(".json").write_text(json.dumps(ph.ground_truth(), indent=2, sort_keys=True) + "\n")
        paths.append(dcm)
    return paths


def render_preview(phantom: Phantom) -> Image.Image:
    """8-bit greyscale image of the phantom in its display window."""
    lo = phantom.window_center - phantom.window_width / 2
    a = (phantom.pixels.astype(np.float32) - lo) / phantom.window_width * 255.0
    return Image.fromarray(np.clip(np.rint(a), 0, 255).astype(np.uint8))
