"""Coronal and sagittal sections of each body region (the axial ones are in `anatomy.py`).

Canvas geometry for these planes: `c.ax` is the horizontal half-extent of the body section (coronal:
half the left-right width; sagittal: half the antero-posterior depth), `c.ay` half the image height
(the trunk runs off the top and bottom of the field of view). Orientation, as a radiologist reads them:
- coronal: patient's right on image left, superior at the top (so laterality reads as on axial images);
- sagittal: anterior on image left, superior at the top; a parasagittal section shows one side only
  (`side` = 'right' or 'left'), so a left/right organ pair never appears together.
Organ names are the axial builders' names (so lesions find their organs), plus 'cerebellum' and
'brainstem'.
"""
from __future__ import annotations

import numpy as np

from .anatomy import TAU, Canvas, Part, lung_vessels, paint_brain, wobble


def _jitter(r: np.random.Generator, s: float):
    return lambda scale=1.0: float(r.normal(0, s * scale))


def _trunk(c: Canvas, g: np.random.Generator, *, wall_mm: float, shift_mm: float = 0.0):
    """Body outline running off the top and bottom of the image, fat, a muscular wall, the cavity."""
    body = c.P(c.bx, c.by, c.ax, c.ay * 3.0, 0, wobble(g, 2, 0.008))
    c.paint([body], "fat", organ="body", container=True, soft=0.8)
    cav = c.P(c.bx + c.mm(shift_mm), c.by, c.ax - c.mm(wall_mm), c.ay * 3.0, 0, body.harm)
    c.paint([body.grow(-c.mm(7))], "muscle", minus=[cav])
    c.paint([cav], "visceral_fat")
    return body, cav


def _bowel(c: Canvas, r, cav: Part, us, vs, n):
    for _ in range(n):
        rr = c.mm(r.uniform(7, 14))
        loop = c.P(c.X(r.uniform(*us)), c.Y(r.uniform(*vs)), rr, rr * r.uniform(0.6, 1.0), r.uniform(0, 180))
        c.paint([loop], "bowel", clip=[cav])
        if r.random() < 0.45:
            c.paint([loop.grow(-loop.ry * 0.4)], "gas", clip=[cav])


def _liver_vessels(c: Canvas, r, liver: Part, cav: Part):
    for _ in range(int(r.integers(3, 7))):
        a = r.uniform(0, TAU)
        ves = c.P(liver.cx + liver.rx * 0.5 * np.cos(a), liver.cy + liver.ry * 0.5 * np.sin(a),
                  c.mm(r.uniform(2, 4)), c.mm(r.uniform(3, 9)), r.uniform(0, 180))
        c.paint([ves], "vessel", soft=1.2, clip=[cav], alpha=0.8)


def _kidney(c: Canvas, g, name: str, cx, cy, rot, hilum_dx):
    kid = c.P(cx, cy, c.mm(26), c.mm(54), rot, wobble(g, 2, 0.03))
    c.paint([kid], "kidney", organ=name)
    c.paint([c.P(kid.cx + hilum_dx, kid.cy, c.mm(7), c.mm(20), rot)], "renal_sinus", clip=[kid.grow(-c.mm(3))])
    return kid


def _stomach(c: Canvas, g, r, cx, cy, cav, *, anterior_left: bool = False):
    st = c.P(cx, cy, c.mm(38), c.mm(50), g.uniform(-20, 20), wobble(g, 2, 0.05))
    c.paint([st], "stomach_wall", organ="stomach", clip=[cav])
    lumen = st.grow(-c.mm(4))
    c.paint([lumen], "fluid", clip=[cav])
    if anterior_left:      # sagittal, supine: gas rises anteriorly, a vertical gas-fluid level
        level = lumen.cx - lumen.rx * r.uniform(0.1, 0.5)
        c.paint([lumen], "gas", clip=[cav, Part(level - 5000, lumen.cy, 5000, 5000)])
    else:                  # coronal: a fundal gas bubble at the top
        top = lumen.cy - lumen.ry * r.uniform(0.2, 0.6)
        c.paint([lumen], "gas", clip=[cav, Part(lumen.cx, top - 5000, 5000, 5000)])


def build_abdomen_coronal(c: Canvas, g, r, side=None):
    J = _jitter(r, 0.025)
    body, cav = _trunk(c, g, wall_mm=20)
    dome_r, dome_l = c.Y(-0.62 + J()), c.Y(-0.52 + J())          # right hemidiaphragm higher
    for s, dome in ((-1, dome_r), (1, dome_l)):                    # lung bases above the domes
        c.paint([c.P(c.X(s * 0.45), dome - c.mm(90), 0.40 * c.ax, c.mm(90))], "lung", clip=[cav])
    _bowel(c, r, cav, (-0.6, 0.6), (0.3, 0.95), int(r.integers(7, 13)))
    for s in (-1, 1):                                              # psoas muscles
        c.paint([c.P(c.X(s * 0.17), c.Y(0.6 + J()), c.mm(19), c.mm(85), -s * 12)], "muscle", clip=[cav])
    liver = c.P(c.X(-0.42 + J()), dome_r + c.mm(72), 0.50 * c.ax, c.mm(72), g.uniform(-8, 8), wobble(g))
    c.paint([liver, c.P(c.X(0.0 + J()), dome_r + c.mm(38), 0.27 * c.ax, c.mm(32), 10)], "liver", organ="liver",
            clip=[cav])
    _liver_vessels(c, r, liver, cav)
    if r.random() < 0.5:
        gb = c.P(c.X(-0.2 + J()), liver.cy + liver.ry * 0.75, c.mm(12), c.mm(24), r.uniform(-30, 30))
        c.paint([gb], "bile", organ="gallbladder", clip=[cav])
    _stomach(c, g, r, c.X(0.30 + J()), dome_l + c.mm(55), cav)
    spleen = c.P(c.X(0.70 + J()), dome_l + c.mm(58), c.mm(28), c.mm(56), -18 + g.uniform(-8, 8), wobble(g))
    c.paint([spleen], "spleen", organ="spleen", clip=[cav])
    _kidney(c, g, "right kidney", c.X(-0.40 + J()), c.Y(0.22 + J()), -12, c.mm(9))
    _kidney(c, g, "left kidney", c.X(0.40 + J()), c.Y(0.12 + J()), 12, -c.mm(9))
    c.paint([c.P(c.X(0.07), c.Y(0.15), c.mm(10), c.mm(150))], "artery", organ="aorta", clip=[cav])
    c.paint([c.P(c.X(-0.10), c.Y(0.2), c.mm(11), c.mm(130))], "vein", organ="inferior vena cava", clip=[cav])


def build_abdomen_sagittal(c: Canvas, g, r, side="right"):
    J = _jitter(r, 0.025)
    body, cav = _trunk(c, g, wall_mm=30, shift_mm=-10)            # thick back muscles behind the cavity
    c.paint([c.P(c.X(0.82), c.by, c.mm(28), c.ay * 3.0)], "muscle", clip=[body.grow(-c.mm(6))])
    dome = c.Y(-0.6 + J()) if side == "right" else c.Y(-0.5 + J())
    c.paint([c.P(c.X(0.35), dome - c.mm(70), 0.5 * c.ax, c.mm(75), 20)], "lung", clip=[cav])   # costophrenic recess
    _bowel(c, r, cav, (-0.7, 0.2), (0.3, 0.95), int(r.integers(6, 11)))
    if side == "right":
        liver = c.P(c.X(-0.02 + J()), dome + c.mm(78), 0.74 * c.ax, c.mm(78), g.uniform(-15, 0), wobble(g))
        c.paint([liver], "liver", organ="liver", clip=[cav])
        _liver_vessels(c, r, liver, cav)
        if r.random() < 0.6:
            gb = c.P(c.X(-0.48 + J()), liver.cy + liver.ry * 0.7, c.mm(13), c.mm(25), 35 + r.uniform(-15, 15))
            c.paint([gb], "bile", organ="gallbladder", clip=[cav])
        _kidney(c, g, "right kidney", c.X(0.45 + J()), c.Y(0.25 + J()), 18, -c.mm(9))
    else:
        _stomach(c, g, r, c.X(-0.32 + J()), dome + c.mm(60), cav, anterior_left=True)
        spleen = c.P(c.X(0.45 + J()), dome + c.mm(55), c.mm(28), c.mm(55), -22 + g.uniform(-8, 8), wobble(g))
        c.paint([spleen], "spleen", organ="spleen", clip=[cav])
        _kidney(c, g, "left kidney", c.X(0.45 + J()), c.Y(0.18 + J()), 18, -c.mm(9))


def build_chest_coronal(c: Canvas, g, r, side=None):
    J = _jitter(r, 0.02)
    body, cav = _trunk(c, g, wall_mm=18)
    for s in (-1, 1):                                              # rib cross-sections along the walls
        for v in np.linspace(-0.85, 0.55, 7) + J(2.0):
            c.paint([c.P(c.X(s * 0.87), c.Y(v), c.mm(5), c.mm(7), s * 20)], "bone_cortex", soft=0.6)
    base_r, base_l = c.Y(0.52 + J()), c.Y(0.62 + J())
    heart = c.P(c.X(0.12 + J()), c.Y(0.36 + J()), c.mm(62), c.mm(50), -20 + g.uniform(-8, 8), wobble(g, 2, 0.03))
    med = c.at(0, -0.4, 0.12, 0.9)
    for s, name, base in ((-1, "right lung", base_r), (1, "left lung", base_l)):
        top = c.Y(-0.92)
        lung = c.P(c.X(s * 0.45 + J()), (top + base) / 2, 0.38 * c.ax, (base - top) / 2, -s * 4, wobble(g, 2, 0.03))
        c.paint([lung], "lung", organ=name, clip=[cav], minus=[med, heart.grow(c.mm(5))])
    lm = c.organs["right lung"] | c.organs["left lung"]
    lung_vessels(c, r, lm, c.bx, c.Y(-0.05), 0.3 * c.ax)
    c.paint([heart.grow(c.mm(3))], "visceral_fat", minus=[heart])
    c.paint([heart], "heart", organ="heart")
    c.paint([c.P(c.X(0.06), c.Y(-0.42 + J()), c.mm(14), c.mm(14))], "artery", organ="aorta")   # aortic arch
    liver = c.P(c.X(-0.42), base_r + c.mm(62), 0.45 * c.ax, c.mm(60), 0, wobble(g))
    c.paint([liver], "liver", organ="liver", clip=[cav])


def build_chest_sagittal(c: Canvas, g, r, side="right"):
    J = _jitter(r, 0.02)
    body, cav = _trunk(c, g, wall_mm=18)
    for s in (-1, 1):                                              # anterior and posterior ribs
        for v in np.linspace(-0.8, 0.5, 6) + J(2.0):
            c.paint([c.P(c.X(s * 0.86), c.Y(v), c.mm(5), c.mm(7), s * 15)], "bone_cortex", soft=0.6)
    name = f"{side} lung"
    base = c.Y((0.5 if side == "right" else 0.6) + J())
    top = c.Y(-0.92)
    lung = c.P(c.X(0.02 + J()), (top + base) / 2, 0.76 * c.ax, (base - top) / 2, -8, wobble(g, 2, 0.03))
    minus = []
    heart = None
    if side == "left":
        heart = c.P(c.X(-0.35 + J()), c.Y(0.32 + J()), c.mm(50), c.mm(46), 25, wobble(g, 2, 0.03))
        minus = [heart.grow(c.mm(4))]
    c.paint([lung], "lung", organ=name, clip=[cav], minus=minus)
    lm = c.organs[name]
    c.img += lm * np.float32(40.0 / c.ax) * (c._xs[None, :] - np.float32(c.bx))   # dependent (posterior) density
    lung_vessels(c, r, lm, c.X(0.05), c.Y(-0.05), 0.35 * c.ax)
    if heart is not None:
        c.paint([heart], "heart", organ="heart")
        c.paint([c.P(c.X(0.55), c.Y(0.05), c.mm(11), c.mm(120))], "artery", organ="aorta", clip=[cav])
    else:
        liver = c.P(c.X(0.0), base + c.mm(66), 0.78 * c.ax, c.mm(64), 0, wobble(g))
        c.paint([liver], "liver", organ="liver", clip=[cav])


def _skull(c: Canvas, head: Part) -> Part:
    outer, inner = head.grow(-c.mm(5)), head.grow(-c.mm(12))
    c.paint([outer], "skull", organ="skull", minus=[inner], soft=0.6)
    c.paint([outer.grow(-c.mm(2))], "diploe", minus=[inner.grow(c.mm(2))])
    c.paint([inner], "csf")
    return inner


def _cerebellum(c: Canvas, parts, brain: Part):
    c.paint([p.grow(c.mm(1.5)) for p in parts], "csf", clip=[brain])          # tentorium / cisterns
    c.paint(parts, "gm", organ="cerebellum", clip=[brain])
    c.paint([p.grow(-c.mm(5)) for p in parts], "wm", clip=[brain], soft=1.2)


def build_head_coronal(c: Canvas, g, r, side=None):
    J = _jitter(r, 0.02)
    head = c.P(c.bx, c.Y(-0.14), c.ax, c.ax * g.uniform(1.0, 1.08), 0, wobble(g, 1, 0.02))
    neck = c.P(c.bx, c.Y(0.85), 0.52 * c.ax, 0.45 * c.ay)
    c.paint([neck], "muscle", organ="head", container=True, soft=0.8)
    c.paint([head], "scalp", organ="head", container=True, soft=0.8)
    brain = paint_brain(c, r, _skull(c, head))
    fis = c.P(c.bx, brain.cy - brain.ry * 0.6, 0.9, brain.ry * 0.42)            # interhemispheric fissure
    c.paint([fis], "csf", clip=[brain], soft=0.6)
    c.paint([fis._replace(rx=0.45)], "falx", clip=[brain], soft=0.4)
    cy = brain.cy + brain.ry * (0.62 + J())
    _cerebellum(c, [c.P(c.bx + s * brain.rx * 0.36, cy, brain.rx * 0.36, brain.ry * 0.3, s * 10) for s in (-1, 1)],
                brain)
    c.paint([c.P(c.bx, brain.cy + brain.ry * 0.72, c.mm(11), c.mm(22))], "wm", organ="brainstem", clip=[brain])
    vy = brain.cy - brain.ry * (0.12 + J())
    vents = [c.P(c.bx + s * c.mm(9), vy, c.mm(5), c.mm(12), s * 35, wobble(g, 1, 0.05)) for s in (-1, 1)]
    c.paint(vents, "csf", organ="lateral ventricles", clip=[brain])
    arteries = [c.P(c.bx + s * brain.rx * 0.6, brain.cy + brain.ry * 0.12, c.mm(1.6), c.mm(7), s * 60) for s in (-1, 1)]
    c.paint(arteries, "artery", clip=[brain], soft=0.8)
    c.paint([c.P(c.bx, brain.cy - brain.ry + c.mm(2.5), c.mm(4), c.mm(3))], "vein", soft=0.8)


def build_head_sagittal(c: Canvas, g, r, side=None):
    J = _jitter(r, 0.02)
    head = c.P(c.bx + c.mm(4), c.Y(-0.08), c.ax, c.ax * g.uniform(0.78, 0.84), 0, wobble(g, 1, 0.02))
    face = c.P(c.X(-0.62), c.Y(0.62), 0.36 * c.ax, 0.42 * c.ay, -10)
    neck = c.P(c.X(0.25), c.Y(0.95), 0.42 * c.ax, 0.4 * c.ay)
    c.paint([face, neck], "muscle", organ="head", container=True, soft=0.8)
    c.paint([head], "scalp", organ="head", container=True, soft=0.8)
    brain = paint_brain(c, r, _skull(c, head))
    cy = brain.cy + brain.ry * (0.55 + J())
    _cerebellum(c, [c.P(brain.cx + brain.rx * 0.52, cy, brain.rx * 0.3, brain.ry * 0.3, -15)], brain)
    stem = c.P(brain.cx + brain.rx * 0.1, brain.cy + brain.ry * 0.62, c.mm(11), c.mm(30), -18)
    c.paint([stem], "wm", organ="brainstem", clip=[brain])
    c.paint([stem._replace(cx=stem.cx - c.mm(13), rx=c.mm(1.8))], "artery", clip=[brain], soft=0.8)   # basilar
    cc = c.P(brain.cx - brain.rx * 0.05, brain.cy - brain.ry * (0.08 + J()), brain.rx * 0.42, c.mm(5))
    c.paint([cc], "wm", clip=[brain], soft=1.0)                                # corpus callosum
    c.paint([cc._replace(cy=cc.cy + c.mm(8), rx=cc.rx * 0.8, ry=c.mm(5.5))], "csf", organ="lateral ventricles",
            clip=[brain])
    c.paint([c.P(brain.cx - brain.rx * 0.3, brain.cy + brain.ry * 0.1, c.mm(1.5), c.mm(8), 70)], "artery",
            clip=[brain], soft=0.8)                                           # anterior cerebral artery
    c.paint([c.P(brain.cx + brain.rx * 0.2, brain.cy - brain.ry + c.mm(2.5), c.mm(5), c.mm(3))], "vein", soft=0.8)


PLANE_BUILDERS = {
    ("ABDOMEN", "coronal"): build_abdomen_coronal, ("ABDOMEN", "sagittal"): build_abdomen_sagittal,
    ("CHEST", "coronal"): build_chest_coronal, ("CHEST", "sagittal"): build_chest_sagittal,
    ("HEAD", "coronal"): build_head_coronal, ("HEAD", "sagittal"): build_head_sagittal,
}
