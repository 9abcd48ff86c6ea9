/* Med-R2 image viewer, part 3 of 3: the controller (docs/viewer.md).
 *
 * One Viewer per `section.mv` (templates/_viewer.html), configured by the JSON script its
 * data-mv-config names (annotation/viewer.py). Needs viewer-render.js and viewer-overlay.js first.
 *
 * Public contract, for pages that work with the viewer (item edit, adjudication case):
 *   window.MedViewer.get(rootEl) -> {setLayerBoxes(key, boxes), setLayerVisible(key, on), setWindow(c, w),
 *       getWindow(), goToSlice(i), getSlice(), setTool(name), getTool(), toggleHelp(on), zoomBy(f), fit(),
 *       getView(), state(), stats()}
 *   events on the root element (bubbling CustomEvents):
 *     mv:ready {mode}           the first frame is shown ('pixels': true window/level; 'png': fallback)
 *     mv:boxdrawn {x0,y0,x1,y1} a box drawn with the draw tool, image pixels, rounded to 0.1, clamped
 *     mv:toolchange {tool}, mv:slice {index, id}, mv:window {center, width}
 * Plain script, no dependencies. */
(function (root) {
  'use strict';
  if (root.MedViewer) return;                               // the include may appear more than once
  const R = root.MedViewerParts.render, O = root.MedViewerParts.overlay;
  const instances = new Map();
  const clamp = (v, lo, hi) => Math.min(hi, Math.max(lo, v));
  const ZOOM_STEP = 1.25, MAX_SCALE = 40, CACHE_FRAMES = 24, PREFETCH = 2;
  const PAINT = 1, VIEW = 2, TEXT = 4, READOUT = 8, LAYOUT = 16;
  const TYPING = ['text', 'number', 'search', 'email', 'url', 'tel', 'password', 'range'];

  function isTyping(el) {
    if (!(el instanceof Element)) return false;
    if (el.isContentEditable || el.tagName === 'TEXTAREA' || el.tagName === 'SELECT') return true;
    return el.tagName === 'INPUT' && TYPING.includes((el.type || 'text').toLowerCase());
  }
  const fmt = (v) => (Number.isInteger(v) ? String(v) : Math.abs(v) >= 100 ? v.toFixed(0) : Number(v.toPrecision(4)).toString());

  class Viewer {
    constructor(rootEl, cfg) {
      this.root = rootEl;
      this.cfg = cfg;
      const q = (sel) => rootEl.querySelector(sel);
      this.el = {
        stage: q('.mv-stage'), canvas: q('.mv-canvas'), svg: q('.mv-overlay'), notice: q('.mv-notice'),
        help: q('.mv-help'), slider: q('.mv-slider'), sliceLabel: q('.mv-slice-label'), sliceLink: q('.mv-slice-link'),
        readout: q('.mv-readout'), wl: q('.mv-wl'), zoom: q('.mv-zoom'), legend: q('.mv-legend'), preset: q('.mv-preset'),
        orient: { top: q('.mv-top'), bottom: q('.mv-bottom'), left: q('.mv-left'), right: q('.mv-right') },
      };
      this.ctx = this.el.canvas.getContext('2d', { willReadFrequently: true });
      this.slices = cfg.series.slices;
      this.index = cfg.series.current;
      this.layers = cfg.layers.map(({ boxes, ...rest }) => ({ ...rest }));
      this.boxes = new Map(this.slices.map((s) => [s.id, { ...s.boxes }]));
      this.presets = cfg.presets || [];
      this.window = cfg.window ? { center: cfg.window.center, width: cfg.window.width } : null;
      this.invert = !!cfg.invert;
      this.tool = 'window';
      this.labels = true;
      this.frames = new Map();                                // slice id -> Promise<frame>
      this.pngs = new Map();                                  // slice id -> Promise<HTMLImageElement>
      this.frame = null; this.img = null; this.mode = 'loading';
      this.view = { scale: 1, tx: 0, ty: 0, fit: 1, fitted: true };
      this.flags = 0; this.raf = 0; this.renders = 0; this.paintMs = 0; this.loadToken = 0; this.wheelAcc = 0;
      this.reserved = new Set((cfg.page_keys || []).flatMap((k) => k.codes || []));
      this.drag = null; this.space = false; this.pointer = null;
      this.bindUi();
      this.bindPointer();
      this.renderLegend();
      this.renderOrientation();
      this.layout();
      this.observedWidth = this.root.clientWidth;
      new ResizeObserver(() => {                               // width changes only; the height is ours
        if (this.root.clientWidth !== this.observedWidth) { this.observedWidth = this.root.clientWidth; this.schedule(LAYOUT); }
      }).observe(this.root);
      this.goToSlice(this.index, true);
    }

    /* ---------------- events out ---------------- */
    emit(name, detail) { this.root.dispatchEvent(new CustomEvent(name, { bubbles: true, detail })); }

    /* ---------------- loading ---------------- */
    current() { return this.slices[this.index]; }
    size() { const s = this.current(); return [s.width || this.cfg.image.width, s.height || this.cfg.image.height]; }

    pixels(slice) {
      if (!slice.pixels) return Promise.reject(new Error(slice.no_pixels || 'no stored values for this image'));
      if (!this.frames.has(slice.id)) {
        const p = R.loadPixels(slice.pixels);
        p.catch(() => {});
        this.frames.set(slice.id, p);
        while (this.frames.size > CACHE_FRAMES) this.frames.delete(this.frames.keys().next().value);
      }
      return this.frames.get(slice.id);
    }

    png(slice) {
      if (!this.pngs.has(slice.id)) {
        this.pngs.set(slice.id, new Promise((resolve, reject) => {
          const img = new Image();
          img.onload = () => resolve(img);
          img.onerror = () => reject(new Error('the rendered image could not be loaded'));
          img.src = slice.png;
        }));
        while (this.pngs.size > CACHE_FRAMES) this.pngs.delete(this.pngs.keys().next().value);
      }
      return this.pngs.get(slice.id);
    }

    load() {
      const token = ++this.loadToken, slice = this.current(), first = this.mode === 'loading';
      const png = this.png(slice);
      png.catch(() => {});
      png.then((img) => {                                     // show the PNG while the values load
        if (token !== this.loadToken || this.frameOf === slice.id) return;
        this.img = img;
        if (this.mode !== 'png') this.mode = 'preview';
        this.schedule(PAINT);
      }, () => {});
      this.pixels(slice).then((frame) => {
        if (token !== this.loadToken) return;
        this.frame = frame; this.frameOf = slice.id; this.mode = 'pixels';
        if (!this.window) this.window = R.fullWindow(frame);
        if (!this.defaultWindow) {
          this.defaultWindow = { ...this.window };
          this.presetKey = this.cfg.window ? 'default' : 'full';
        }
        this.setNotice('');
        this.setState('pixels', first);
        this.prefetch();
      }, (err) => {
        if (token !== this.loadToken) return;
        this.frame = null; this.frameOf = null;
        png.then((img) => {
          if (token !== this.loadToken) return;
          this.img = img; this.mode = 'png';
          this.setNotice(`Window/level unavailable (${err.message}): showing the rendered image.`);
          if (this.tool === 'window') this.setTool('pan');
          this.setState('png', first);
        }, () => {
          this.setNotice('The image could not be loaded.');
          this.setState('error', first);
        });
      });
    }

    prefetch() {
      for (let d = 1; d <= PREFETCH; d++) {
        for (const i of [this.index + d, this.index - d]) {
          const s = this.slices[i];
          if (s) { this.pixels(s); this.png(s).catch(() => {}); }
        }
      }
    }

    setState(mode, first) {
      this.root.dataset.mvState = mode;
      this.root.classList.toggle('mv-fallback', mode === 'png');
      this.root.querySelectorAll('[data-needs-pixels]').forEach((b) => { b.disabled = mode !== 'pixels'; });
      this.schedule(PAINT | VIEW | TEXT);
      if (first) requestAnimationFrame(() => this.emit('mv:ready', { mode }));
    }

    setNotice(text) { this.el.notice.textContent = text; this.el.notice.hidden = !text; }

    /* ---------------- drawing ---------------- */
    schedule(flags) {
      this.flags |= flags;
      if (!this.raf) this.raf = requestAnimationFrame(() => this.tick());
    }

    tick() {
      this.raf = 0;
      if (this.flags & LAYOUT) { this.flags &= ~LAYOUT; this.layout(); }
      let flags = this.flags;
      this.flags = 0;
      if ((flags & PAINT) && this.paint()) flags |= VIEW;     // the canvas changed size
      if (flags & VIEW) this.applyView();
      if (flags & (TEXT | PAINT | VIEW)) this.updateText();
      else if (flags & READOUT) this.updateReadout();
    }

    paint() {
      const [w, h] = this.size(), canvas = this.el.canvas;
      const resized = canvas.width !== w || canvas.height !== h;
      if (resized) { canvas.width = w; canvas.height = h; this.imageData = null; }
      if (this.mode === 'pixels' && this.frame) {
        const t0 = performance.now();
        if (!this.imageData) this.imageData = this.ctx.createImageData(w, h);
        R.paint(this.frame, this.imageData, this.window.center, this.window.width, this.invert);
        this.ctx.putImageData(this.imageData, 0, 0);
        canvas.style.filter = '';
        this.renders++;
        this.paintMs += performance.now() - t0;
      } else if (this.img) {
        this.ctx.drawImage(this.img, 0, 0, w, h);
        canvas.style.filter = this.invert ? 'invert(1)' : '';
      }
      return resized;
    }

    applyView() {
      const { scale, tx, ty } = this.view, [w, h] = this.size(), canvas = this.el.canvas;
      canvas.style.width = w + 'px';
      canvas.style.height = h + 'px';
      canvas.style.transform = `translate(${tx}px, ${ty}px) scale(${scale})`;
      canvas.style.imageRendering = scale >= 1 ? 'pixelated' : 'auto';
      const boxes = this.boxes.get(this.current().id) || {};
      const layers = this.layers.map((l) => ({ ...l, boxes: boxes[l.key] || [] }));
      if (this.drawing) layers.find((l) => l.key === 'drawn').boxes = [this.drawing];
      const result = O.draw(this.el.svg, { width: this.stageW, height: this.stageH, layers, labels: this.labels,
                                           toScreen: (x, y) => [x * scale + tx, y * scale + ty] });
      this.hiddenLabels = result.hidden;
      this.renderLegendCounts(boxes);
    }

    updateText() {
      const win = this.window, pixels = this.mode === 'pixels';
      const preset = pixels && this.presetKey ? this.presets.find((p) => p.key === this.presetKey) : null;
      this.el.wl.textContent = pixels && win ? `W ${fmt(win.width)} · L ${fmt(win.center)}${preset ? ' (' + preset.name + ')' : ''}${this.invert ? ' · inverted' : ''}`
        : this.mode === 'loading' || this.mode === 'preview' ? 'loading values…' : 'rendered image (no window/level)';
      this.el.zoom.textContent = `zoom ${Math.round(this.view.scale * 100)}%` + (this.hiddenLabels ? ` · ${this.hiddenLabels} label${this.hiddenLabels > 1 ? 's' : ''} hidden (zoom in)` : '');
      if (this.el.preset) this.el.preset.value = this.presetKey || 'custom';
      this.root.querySelectorAll('[data-action="invert"]').forEach((b) => b.setAttribute('aria-pressed', String(this.invert)));
      this.updateReadout();
    }

    updateReadout() {
      const p = this.pointer, [w, h] = this.size();
      if (!p || p.x < 0 || p.y < 0 || p.x >= w || p.y >= h) { this.el.readout.textContent = 'pointer outside the image'; return; }
      const x = Math.floor(p.x), y = Math.floor(p.y);
      let text = `x ${x} · y ${y}`;
      if (this.mode === 'pixels' && this.frame) {
        const v = R.valueAt(this.frame, x, y), units = this.frame.units || this.cfg.units;
        text += ` · ${v === null || v !== v ? 'no value' : fmt(v) + (units ? ' ' + units : '')}`;
      } else text += ' · value not available';
      this.el.readout.textContent = text;
    }

    /* ---------------- view: layout, zoom, pan ---------------- */
    layout() {
      const stage = this.el.stage, [w, h] = this.size();
      const full = document.fullscreenElement === this.root;
      const width = stage.clientWidth || 600;
      const maxH = full ? window.innerHeight - (this.root.offsetHeight - stage.offsetHeight) : Math.min(window.innerHeight * 0.8, 900);
      const height = Math.round(clamp(width * h / w, 240, Math.max(240, maxH)));
      if (!full) stage.style.height = height + 'px'; else stage.style.height = '';
      this.stageW = stage.clientWidth; this.stageH = stage.clientHeight;
      if (this.view.fitted) this.fit(); else this.schedule(VIEW);
    }

    fit() {
      const [w, h] = this.size();
      const scale = Math.min(this.stageW / w, this.stageH / h);
      this.view = { scale, fit: scale, tx: (this.stageW - w * scale) / 2, ty: (this.stageH - h * scale) / 2, fitted: true };
      this.schedule(VIEW | TEXT);
      return true;
    }

    zoomAt(factor, sx = this.stageW / 2, sy = this.stageH / 2) {
      const v = this.view, scale = clamp(v.scale * factor, v.fit / 4, Math.max(MAX_SCALE, v.fit));
      const ix = (sx - v.tx) / v.scale, iy = (sy - v.ty) / v.scale;
      this.view = { ...v, scale, tx: sx - ix * scale, ty: sy - iy * scale, fitted: false };
      this.schedule(VIEW | TEXT);
      return true;
    }

    panBy(dx, dy) {
      const v = this.view, [w, h] = this.size(), keep = 40;
      const tx = clamp(v.tx + dx, keep - w * v.scale, this.stageW - keep);
      const ty = clamp(v.ty + dy, keep - h * v.scale, this.stageH - keep);
      this.view = { ...v, tx, ty, fitted: false };
      this.schedule(VIEW);
      return true;
    }

    toImage(e) {
      const r = this.el.stage.getBoundingClientRect(), v = this.view;
      const sx = e.clientX - r.left, sy = e.clientY - r.top;
      return { sx, sy, x: (sx - v.tx) / v.scale, y: (sy - v.ty) / v.scale };
    }

    /* ---------------- window/level ---------------- */
    setWindow(center, width, presetKey = null) {
      if (!this.frame || !Number.isFinite(center) || !Number.isFinite(width)) return false;
      this.window = { center, width: Math.max(width, R.minimumWidth(this.frame)) };
      this.presetKey = presetKey;
      this.schedule(PAINT);
      this.emit('mv:window', { ...this.window });
      return true;
    }

    applyPreset(key) {
      const p = this.presets.find((x) => x.key === key);
      if (!p || !this.frame) return false;
      const w = p.kind === 'auto' ? R.autoWindow(this.frame) : p.kind === 'full' ? R.fullWindow(this.frame) : p;
      return this.setWindow(w.center, w.width, p.key);
    }

    nudgeWindow(dCenterFrac, widthFactor) {
      if (!this.frame) return false;
      const range = Math.max(this.frame.max - this.frame.min, 1);
      return this.setWindow(this.window.center + dCenterFrac * range, this.window.width * widthFactor);
    }

    reset() {
      this.invert = !!this.cfg.invert;
      if (this.frame && this.defaultWindow) this.setWindow(this.defaultWindow.center, this.defaultWindow.width, this.cfg.window ? 'default' : 'full');
      this.fit();
      this.schedule(PAINT | TEXT);
      return true;
    }

    toggleInvert(on) { this.invert = on === undefined ? !this.invert : !!on; this.schedule(PAINT | TEXT); return true; }

    /* ---------------- series ---------------- */
    goToSlice(i, initial = false) {
      if (!Number.isInteger(i) || i < 0 || i >= this.slices.length) return false;
      if (i === this.index && !initial) return true;
      const [w0, h0] = this.size();
      this.index = i;
      const slice = this.current(), [w, h] = this.size();
      if (w !== w0 || h !== h0) this.view.fitted = true;
      this.drawing = null;
      this.root.dataset.mvSlice = String(i);
      if (this.el.slider) { this.el.slider.value = String(i + 1); this.el.slider.setAttribute('aria-valuetext', `slice ${i + 1} of ${this.slices.length}`); }
      if (this.el.sliceLabel) this.el.sliceLabel.textContent = `${i + 1} / ${this.slices.length}` + (slice.frame !== null && slice.frame !== undefined ? ` · frame ${slice.frame}` : '');
      if (this.el.sliceLink) {
        this.el.sliceLink.hidden = !slice.url || i === this.cfg.series.current;
        if (slice.url) { this.el.sliceLink.href = slice.url; this.el.sliceLink.textContent = `open image #${slice.id}`; }
      }
      if (!initial) this.emit('mv:slice', { index: i, id: slice.id });
      if (this.view.fitted) this.layout();
      this.load();
      return true;
    }

    /* ---------------- layers ---------------- */
    setLayerBoxes(key, boxes) {
      if (!this.layers.some((l) => l.key === key)) return false;
      const clean = (boxes || []).map((b) => ({ x0: +b.x0, y0: +b.y0, x1: +b.x1, y1: +b.y1, label: String(b.label || '') }))
        .filter((b) => [b.x0, b.y0, b.x1, b.y1].every(Number.isFinite));
      const id = this.current().id;
      this.boxes.set(id, { ...(this.boxes.get(id) || {}), [key]: clean });
      this.schedule(VIEW);
      return true;
    }

    setLayerVisible(key, on) {
      const layer = this.layers.find((l) => l.key === key);
      if (!layer) return false;
      layer.visible = !!on;
      const box = this.el.legend.querySelector(`input[data-layer="${CSS.escape(key)}"]`);
      if (box) box.checked = layer.visible;
      this.schedule(VIEW);
      return true;
    }

    toggleKind(kinds) {
      const layers = this.layers.filter((l) => kinds.includes(l.kind));
      if (!layers.length) return false;
      const show = !layers.some((l) => l.visible);
      layers.forEach((l) => this.setLayerVisible(l.key, show));
      return true;
    }

    renderLegend() {
      const ul = this.el.legend;
      ul.textContent = '';
      for (const l of this.layers) {
        const li = document.createElement('li');
        li.innerHTML = `<label><input type="checkbox" class="mv-layer-toggle"> <svg class="mv-swatch" width="24" height="12" aria-hidden="true"><rect x="1.5" y="1.5" width="21" height="9" fill="none" stroke-width="2"/></svg> <span class="mv-layer-name"></span> <span class="mv-count muted"></span></label>`;
        const input = li.querySelector('input'), rect = li.querySelector('rect');
        input.dataset.layer = l.key;
        input.checked = l.visible;
        rect.setAttribute('stroke', l.colour);
        if (l.dash) rect.setAttribute('stroke-dasharray', l.dash);
        li.querySelector('.mv-layer-name').textContent = l.name;
        li.dataset.kind = l.kind;
        input.addEventListener('change', () => this.setLayerVisible(l.key, input.checked));
        ul.appendChild(li);
      }
    }

    renderLegendCounts(boxes) {
      this.el.legend.querySelectorAll('li').forEach((li) => {
        const key = li.querySelector('input').dataset.layer, n = (boxes[key] || []).length;
        li.querySelector('.mv-count').textContent = `(${n})`;
      });
    }

    renderOrientation() {
      const o = this.cfg.orientation;
      for (const [side, node] of Object.entries(this.el.orient)) {
        if (!node) continue;
        node.textContent = o ? o[side] || '' : '';
        node.classList.toggle('mv-assumed', !!(o && o.assumed));
        node.title = o ? `orientation: ${o.source}` : '';
      }
    }

    /* ---------------- tools ---------------- */
    setTool(tool) {
      const allowed = ['window', 'pan'].concat(this.cfg.draw ? ['draw'] : []);
      if (!allowed.includes(tool) || (tool === 'window' && this.mode === 'png')) return false;
      if (tool === 'draw' && this.tool !== 'draw') this.toolBeforeDraw = this.tool;
      this.tool = tool;
      this.drawing = null;
      this.root.dataset.mvTool = tool;
      this.root.querySelectorAll('.mv-tool').forEach((b) => b.setAttribute('aria-pressed', String(b.dataset.tool === tool)));
      this.emit('mv:toolchange', { tool });
      this.schedule(VIEW);
      return true;
    }

    finishDraw(a, b) {
      const [w, h] = this.size(), r = (v) => Math.round(v * 10) / 10;
      let x0 = r(clamp(Math.min(a.x, b.x), 0, w)), x1 = r(clamp(Math.max(a.x, b.x), 0, w));
      let y0 = r(clamp(Math.min(a.y, b.y), 0, h)), y1 = r(clamp(Math.max(a.y, b.y), 0, h));
      if (x1 - x0 < 1) { if (x0 + 1 <= w) x1 = r(x0 + 1); else x0 = r(x1 - 1); }   // at least one pixel
      if (y1 - y0 < 1) { if (y0 + 1 <= h) y1 = r(y0 + 1); else y0 = r(y1 - 1); }
      const box = { x0, y0, x1, y1 };
      this.drawing = null;
      this.setLayerBoxes('drawn', [{ ...box, label: 'your box' }]);
      this.setTool(this.toolBeforeDraw || 'window');
      this.emit('mv:boxdrawn', box);
    }

    toggleHelp(on) {
      const help = this.el.help, show = on === undefined ? help.hidden : !!on;
      help.hidden = !show;
      this.root.querySelectorAll('[data-action="help"]').forEach((b) => b.setAttribute('aria-expanded', String(show)));
      return true;
    }

    fullscreen() {
      if (document.fullscreenElement === this.root) document.exitFullscreen();
      else if (this.root.requestFullscreen) this.root.requestFullscreen().catch(() => this.setNotice('Fullscreen is not available here.'));
      return true;
    }

    /* ---------------- wiring ---------------- */
    bindUi() {
      const actions = {
        'zoom-in': () => this.zoomAt(ZOOM_STEP), 'zoom-out': () => this.zoomAt(1 / ZOOM_STEP), fit: () => this.fit(),
        one: () => this.zoomAt(1 / this.view.scale), invert: () => this.toggleInvert(), reset: () => this.reset(),
        fullscreen: () => this.fullscreen(), help: () => this.toggleHelp(),
      };
      this.root.addEventListener('click', (e) => {
        const button = e.target.closest('button');
        if (!button || !this.root.contains(button)) return;
        if (button.dataset.tool) this.setTool(button.dataset.tool);
        else if (actions[button.dataset.action]) actions[button.dataset.action]();
      });
      if (this.el.preset) this.el.preset.addEventListener('change', () => this.applyPreset(this.el.preset.value));
      if (this.el.slider) this.el.slider.addEventListener('input', () => this.goToSlice(Number(this.el.slider.value) - 1));
      document.addEventListener('fullscreenchange', () => {
        const on = document.fullscreenElement === this.root;
        this.root.classList.toggle('mv-fullscreen', on);
        this.root.querySelectorAll('[data-action="fullscreen"]').forEach((b) => b.setAttribute('aria-pressed', String(on)));
        this.view.fitted = true;
        this.layout();
      });
      window.addEventListener('keydown', (e) => this.onKey(e));
      window.addEventListener('keyup', (e) => { if (e.key === ' ') this.space = false; });
    }

    bindPointer() {
      const stage = this.el.stage;
      stage.addEventListener('contextmenu', (e) => e.preventDefault());
      stage.addEventListener('dblclick', () => this.fit());
      stage.addEventListener('pointerdown', (e) => {
        if (e.target.closest('.mv-help, .mv-notice')) return;      // reading the overlays is no drag
        const p = this.toImage(e);
        stage.focus({ preventScroll: true });
        let mode = e.button === 1 ? 'pan' : e.button === 2 ? 'window' : e.button === 0 ? (this.space ? 'pan' : this.tool) : null;
        if (mode === 'window' && this.mode !== 'pixels') mode = 'pan';
        if (!mode) return;
        e.preventDefault();
        stage.setPointerCapture(e.pointerId);
        this.drag = { mode, id: e.pointerId, sx: p.sx, sy: p.sy, start: p, win: this.window && { ...this.window } };
        stage.dataset.dragging = mode;
      });
      stage.addEventListener('pointermove', (e) => {
        const p = this.toImage(e);
        this.pointer = p;
        this.schedule(READOUT);
        const d = this.drag;
        if (!d || d.id !== e.pointerId) return;
        if (d.mode === 'pan') { this.panBy(p.sx - d.sx, p.sy - d.sy); d.sx = p.sx; d.sy = p.sy; }
        else if (d.mode === 'window' && d.win && this.frame) {
          const step = Math.max((this.frame.max - this.frame.min) / 1024, R.minimumWidth(this.frame));
          this.setWindow(d.win.center + (p.sy - d.start.sy) * step, d.win.width + (p.sx - d.start.sx) * step);
        } else if (d.mode === 'draw') {
          const [w, h] = this.size();
          this.drawing = { x0: clamp(Math.min(d.start.x, p.x), 0, w), y0: clamp(Math.min(d.start.y, p.y), 0, h),
                           x1: clamp(Math.max(d.start.x, p.x), 0, w), y1: clamp(Math.max(d.start.y, p.y), 0, h), label: '' };
          this.schedule(VIEW);
        }
      });
      const end = (e) => {
        const d = this.drag;
        if (!d || d.id !== e.pointerId) return;
        this.drag = null;
        delete stage.dataset.dragging;
        if (d.mode === 'draw' && e.type === 'pointerup') this.finishDraw(d.start, this.toImage(e));
        else if (d.mode === 'draw') { this.drawing = null; this.schedule(VIEW); }
      };
      stage.addEventListener('pointerup', end);
      stage.addEventListener('pointercancel', end);
      stage.addEventListener('pointerleave', () => { this.pointer = null; this.schedule(READOUT); });
      stage.addEventListener('wheel', (e) => {
        e.preventDefault();
        const p = this.toImage(e);
        if (e.ctrlKey || e.metaKey || this.slices.length < 2) { this.zoomAt(e.deltaY < 0 ? ZOOM_STEP : 1 / ZOOM_STEP, p.sx, p.sy); return; }
        this.wheelAcc += e.deltaMode === 1 ? e.deltaY * 40 : e.deltaY;   // lines -> pixels
        if (Math.abs(this.wheelAcc) < 50) return;
        this.goToSlice(clamp(this.index + Math.sign(this.wheelAcc), 0, this.slices.length - 1));
        this.wheelAcc = 0;
      }, { passive: false });
    }

    ownsKeys(e) {
      if (this.root.contains(e.target)) return true;
      if (instances.size !== 1) return false;
      return !(e.target instanceof Element) || !e.target.closest('.mv') || e.target === document.body;
    }

    onKey(e) {
      if (e.defaultPrevented || e.isComposing || !this.ownsKeys(e)) return;
      if (e.key === 'Escape') {
        if (!this.el.help.hidden) return void this.toggleHelp(false);
        if (this.drag && this.drag.mode === 'draw') { this.drag = null; this.drawing = null; this.schedule(VIEW); }
        if (this.tool === 'draw') this.setTool(this.toolBeforeDraw || 'window');
        return;
      }
      if (isTyping(e.target) || e.ctrlKey || e.metaKey || e.altKey) return;
      if (e.key === ' ' && e.target === this.el.stage) { this.space = true; e.preventDefault(); return; }   // Space+drag pans
      const key = e.key.length === 1 && !e.shiftKey ? e.key.toLowerCase() : e.key;
      if (this.reserved.has(key.toLowerCase()) && key !== 'F') return;
      const pan = 0.1 * Math.min(this.stageW, this.stageH);
      const handlers = {
        '?': () => this.toggleHelp(), '+': () => this.zoomAt(ZOOM_STEP), '=': () => this.zoomAt(ZOOM_STEP),
        '-': () => this.zoomAt(1 / ZOOM_STEP), _: () => this.zoomAt(1 / ZOOM_STEP), 0: () => this.fit(),
        ArrowUp: () => (e.shiftKey ? this.panBy(0, pan) : this.goToSlice(this.index - 1)),
        ArrowDown: () => (e.shiftKey ? this.panBy(0, -pan) : this.goToSlice(this.index + 1)),
        ArrowLeft: () => e.shiftKey && this.panBy(pan, 0), ArrowRight: () => e.shiftKey && this.panBy(-pan, 0),
        PageUp: () => this.goToSlice(Math.max(0, this.index - 5)),
        PageDown: () => this.goToSlice(Math.min(this.slices.length - 1, this.index + 5)),
        Home: () => this.goToSlice(0), End: () => this.goToSlice(this.slices.length - 1),
        '[': () => this.nudgeWindow(0, 1 / 1.2), ']': () => this.nudgeWindow(0, 1.2),
        ',': () => this.nudgeWindow(-0.02, 1), '.': () => this.nudgeWindow(0.02, 1),
        i: () => this.toggleInvert(), r: () => this.reset(), w: () => this.setTool('window'), p: () => this.setTool('pan'),
        d: () => this.setTool(this.tool === 'draw' ? this.toolBeforeDraw || 'window' : 'draw'),
        g: () => this.toggleKind(['gold']), m: () => this.toggleKind(['model']),
        l: () => { this.labels = !this.labels; this.schedule(VIEW); return true; }, F: () => this.fullscreen(),
      };
      for (let n = 1; n <= 9; n++) handlers[n] = () => this.presets[n - 1] && this.applyPreset(this.presets[n - 1].key);
      const handler = Object.prototype.hasOwnProperty.call(handlers, key) && handlers[key];
      if (!handler) return;
      if (['ArrowUp', 'ArrowDown', 'PageUp', 'PageDown', 'Home', 'End', ' '].includes(key) && !this.root.contains(e.target) && this.slices.length < 2) return;
      if (handler() !== false) e.preventDefault();
    }

    api() {
      return {
        root: this.root,
        setLayerBoxes: (key, boxes) => this.setLayerBoxes(key, boxes),
        setLayerVisible: (key, on) => this.setLayerVisible(key, on),
        getLayers: () => this.layers.map((l) => ({ ...l, boxes: (this.boxes.get(this.current().id) || {})[l.key] || [] })),
        setWindow: (center, width) => this.setWindow(Number(center), Number(width)),
        getWindow: () => (this.mode === 'pixels' && this.window ? { ...this.window } : null),
        applyPreset: (key) => this.applyPreset(key),
        goToSlice: (i) => this.goToSlice(i),
        getSlice: () => ({ index: this.index, id: this.current().id, count: this.slices.length }),
        setTool: (tool) => this.setTool(tool), getTool: () => this.tool,
        toggleHelp: (on) => this.toggleHelp(on), toggleInvert: (on) => this.toggleInvert(on),
        zoomBy: (factor) => this.zoomAt(factor), fit: () => this.fit(),
        getView: () => ({ ...this.view, stageWidth: this.stageW, stageHeight: this.stageH }),
        state: () => this.mode,
        stats: () => ({ renders: this.renders, paintMs: this.paintMs, hiddenLabels: this.hiddenLabels || 0 }),
      };
    }
  }

  function init() {
    document.querySelectorAll('section.mv[data-mv-config]').forEach((el) => {
      if (instances.has(el)) return;
      const script = document.getElementById(el.dataset.mvConfig);
      if (!script) return;
      instances.set(el, new Viewer(el, JSON.parse(script.textContent)).api());
    });
  }

  root.MedViewer = {
    get: (el) => instances.get(el && el.closest ? el.closest('section.mv') : el) || null,
    all: () => Array.from(instances.values()),
    init,
  };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})(window);
