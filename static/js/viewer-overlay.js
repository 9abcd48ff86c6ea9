/* Med-R2 image viewer, part 2 of 3: box layers as an SVG overlay in screen pixels (docs/viewer.md).
 *
 * MedViewerParts.overlay:
 *   draw(svg, {width, height, layers, toScreen, labels})  redraw every visible layer's boxes;
 *       layers: [{key, colour, dash, kind, visible, boxes: [{x0, y0, x1, y1, label}]}], boxes in image
 *       pixels; toScreen(x, y) -> [sx, sy]. Returns {shown, hidden}: labels drawn, labels left out.
 *   placeLabels(items, width, height)  greedy placement: each label takes the first free candidate
 *       next to its box (above, inside, below, at either side), else the nearest free spot on rings
 *       around the box with a leader line; a label that finds no free spot is left out (its box keeps
 *       a <title>), so labels never overlap each other or leave the stage.
 * Labels are drawn at a fixed 12 px whatever the zoom; strokes do not scale either. */
(function (root) {
  'use strict';
  const parts = root.MedViewerParts = root.MedViewerParts || {};
  const SVG = 'http://www.w3.org/2000/svg';
  const FONT_PX = 12, PAD_X = 4, LABEL_H = FONT_PX + 6, GAP = 2, MARGIN = 1;
  let measure = null;

  function textWidth(text) {
    if (!measure) {
      measure = document.createElement('canvas').getContext('2d');
      measure.font = `600 ${FONT_PX}px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif`;
    }
    return Math.ceil(measure.measureText(text).width) + 2 * PAD_X;
  }

  function el(name, attrs, parent) {
    const node = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined && v !== '') node.setAttribute(k, v);
    if (parent) parent.appendChild(node);
    return node;
  }

  const overlaps = (a, b) => a.x < b.x + b.w + MARGIN && b.x < a.x + a.w + MARGIN &&
                             a.y < b.y + b.h + MARGIN && b.y < a.y + a.h + MARGIN;

  function candidates(box, w, h) {
    const { x, y } = box, r = box.x + box.w, b = box.y + box.h;
    return [
      { x, y: y - h - GAP },                 // above, left-aligned
      { x: x + GAP, y: y + GAP },            // inside, top-left
      { x, y: b + GAP },                     // below, left-aligned
      { x: r - w, y: y - h - GAP },          // above, right-aligned
      { x: r - w, y: b + GAP },              // below, right-aligned
      { x: r + GAP, y },                     // right side
      { x: x - w - GAP, y },                 // left side
      { x: r - w - GAP, y: b - h - GAP },    // inside, bottom-right
    ];
  }

  // The point of rectangle `box` nearest to (px, py): where a leader line ends.
  function nearestOn(box, px, py) {
    return [Math.min(Math.max(px, box.x), box.x + box.w), Math.min(Math.max(py, box.y), box.y + box.h)];
  }

  function placeLabels(items, width, height) {
    const placed = [];
    const fits = (c) => c.x >= 0 && c.y >= 0 && c.x + c.w <= width && c.y + c.h <= height &&
                        !placed.some((p) => overlaps(c, p));
    return items.map((item) => {
      const w = item.w, h = item.h;
      let spot = candidates(item.box, w, h).map((c) => ({ x: c.x, y: c.y, w, h })).find(fits);
      let leader = null;
      if (!spot) {                                        // rings of growing radius around the box
        const cx = item.box.x + item.box.w / 2, cy = item.box.y + item.box.h / 2;
        const reach = Math.hypot(width, height);
        for (let ring = 1; !spot && ring * LABEL_H < reach; ring++) {
          const radius = Math.max(item.box.w, item.box.h) / 2 + ring * LABEL_H;
          const steps = 8 + 4 * ring;
          for (let k = 0; k < steps && !spot; k++) {
            const angle = -Math.PI / 2 + (2 * Math.PI * k) / steps;
            const c = { x: cx + radius * Math.cos(angle) - w / 2, y: cy + radius * Math.sin(angle) - h / 2, w, h };
            if (fits(c)) spot = c;
          }
        }
        if (spot) {
          const mx = spot.x + w / 2, my = spot.y + h / 2;
          const [ex, ey] = nearestOn(item.box, mx, my);
          const [sx, sy] = nearestOn(spot, ex, ey);
          leader = [sx, sy, ex, ey];
        }
      }
      if (spot) placed.push(spot);
      return spot ? { x: spot.x, y: spot.y, w, h, leader } : null;
    });
  }

  function draw(svg, opts) {
    const { width, height, layers, toScreen } = opts;
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    svg.setAttribute('width', width);
    svg.setAttribute('height', height);
    svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
    const boxesGroup = el('g', { class: 'mv-boxes' }, svg);
    const labelsGroup = el('g', { class: 'mv-labels' }, svg);
    const items = [];
    const view = { x: 0, y: 0, w: width, h: height };
    // gold first: it keeps the best label spots when space is short
    const order = layers.filter((l) => l.visible).sort((a, b) => (a.kind === 'gold' ? 0 : 1) - (b.kind === 'gold' ? 0 : 1));
    for (const layer of order) {
      const g = el('g', { class: `mv-layer mv-${layer.kind}`, 'data-layer': layer.key }, boxesGroup);
      for (const b of layer.boxes || []) {
        const [x0, y0] = toScreen(b.x0, b.y0), [x1, y1] = toScreen(b.x1, b.y1);
        const rect = { x: Math.min(x0, x1), y: Math.min(y0, y1), w: Math.abs(x1 - x0), h: Math.abs(y1 - y0) };
        const attrs = { x: rect.x.toFixed(1), y: rect.y.toFixed(1), width: rect.w.toFixed(1), height: rect.h.toFixed(1) };
        el('rect', { ...attrs, class: 'mv-halo' }, g);
        const shape = el('rect', { ...attrs, class: 'mv-box', stroke: layer.colour, 'stroke-dasharray': layer.dash,
                                   'data-x0': b.x0, 'data-y0': b.y0, 'data-x1': b.x1, 'data-y1': b.y1 }, g);
        if (b.label && opts.labels !== false && overlaps(rect, view)) {
          items.push({ box: rect, text: b.label, colour: layer.colour, layer: layer.key, shape,
                       w: textWidth(b.label), h: LABEL_H });
        } else if (b.label) {
          el('title', {}, shape).textContent = b.label;
        }
      }
    }
    const spots = placeLabels(items, width, height);
    let shown = 0, hidden = 0;
    items.forEach((item, i) => {
      const spot = spots[i];
      if (!spot) {                                       // no free spot: the label lives in a tooltip
        el('title', {}, item.shape).textContent = item.text;
        hidden++;
        return;
      }
      shown++;
      const g = el('g', { class: 'mv-label', 'data-layer': item.layer }, labelsGroup);
      if (spot.leader) el('line', { x1: spot.leader[0], y1: spot.leader[1], x2: spot.leader[2], y2: spot.leader[3],
                                    class: 'mv-leader', stroke: item.colour }, g);
      el('rect', { x: spot.x.toFixed(1), y: spot.y.toFixed(1), width: spot.w, height: spot.h, rx: 3,
                   class: 'mv-label-bg', stroke: item.colour }, g);
      const text = el('text', { x: (spot.x + PAD_X).toFixed(1), y: (spot.y + spot.h / 2).toFixed(1), class: 'mv-label-text',
                                'dominant-baseline': 'central', 'font-size': FONT_PX }, g);
      text.textContent = item.text;
    });
    return { shown, hidden };
  }

  parts.overlay = { draw, placeLabels, textWidth, FONT_PX };
})(window);
