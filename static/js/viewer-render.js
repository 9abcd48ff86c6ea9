/* Med-R2 image viewer, part 1 of 3: stored values in, grey pixels out (docs/viewer.md).
 *
 * MedViewerParts.render:
 *   loadPixels(url, signal)   fetch GET /images/<pk>/pixels -> a frame {values, width, height, dtype,
 *                             min, max, units}; rejects with Error(detail) on a 404/422 answer
 *   paint(frame, imageData, center, width, invert)
 *                             window/level into RGBA: grey = round(((v - c) / w + 0.5) * 255), clipped
 *                             to 0..255 (DICOM LINEAR_EXACT, the import's own mapping); Int16 frames
 *                             go through a lookup table over [min, max], Float32 frames are mapped
 *                             per pixel; NaN is black
 *   greyOf(v, center, width)  the same mapping for one value (what the tests check on the canvas)
 *   autoWindow(frame)         0.5th..99.5th percentile of the finite values (like the import)
 *   fullWindow(frame)         minimum..maximum
 *   valueAt(frame, x, y)      the stored value of pixel (x, y), or null outside the frame
 * Plain script, no dependencies. */
(function (root) {
  'use strict';
  const parts = root.MedViewerParts = root.MedViewerParts || {};
  const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
  const OPAQUE_BLACK = 0xff000000;

  function typed(buffer, dtype) {
    const size = dtype === 'int16' ? 2 : dtype === 'float32' ? 4 : 0;
    if (!size) throw new Error('unknown pixel type ' + dtype);
    const n = buffer.byteLength / size;
    if (LITTLE_ENDIAN) return size === 2 ? new Int16Array(buffer) : new Float32Array(buffer);
    const view = new DataView(buffer);                     // big-endian platform: swap while copying
    const out = size === 2 ? new Int16Array(n) : new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = size === 2 ? view.getInt16(2 * i, true) : view.getFloat32(4 * i, true);
    return out;
  }

  async function loadPixels(url, signal) {
    const res = await fetch(url, { credentials: 'same-origin', signal, headers: { Accept: 'application/octet-stream' } });
    if (!res.ok) {
      let detail = 'the server answered ' + res.status;
      try { detail = (await res.json()).detail || detail; } catch (err) { /* not JSON */ }
      const error = new Error(detail);
      error.status = res.status;
      throw error;
    }
    const header = (name) => res.headers.get('X-Pixel-' + name);
    const dtype = header('Dtype'), width = Number(header('Width')), height = Number(header('Height'));
    const values = typed(await res.arrayBuffer(), dtype);
    if (!(width > 0 && height > 0) || values.length !== width * height) throw new Error('the pixel data has an unexpected size');
    return { values, width, height, dtype, min: Number(header('Min')), max: Number(header('Max')),
             units: header('Units') || '' };
  }

  function greyOf(v, center, width) {
    if (v !== v) return 0;                                      // NaN
    const g = ((v - center) / width + 0.5) * 255;
    return g <= 0 ? 0 : g >= 255 ? 255 : Math.round(g);
  }

  function paint(frame, imageData, center, width, invert) {
    const out = new Uint32Array(imageData.data.buffer);
    const values = frame.values, n = values.length;
    width = Math.max(width, 1e-6);
    const lo = center - width / 2, scale = 255 / width;
    if (frame.dtype === 'int16') {
      const min = frame.min | 0, size = (frame.max | 0) - min + 1;
      let lut = frame.lut;
      if (!lut || lut.length !== size) lut = frame.lut = new Uint32Array(size);
      for (let i = 0; i < size; i++) {
        let g = (min + i - lo) * scale;
        g = g <= 0 ? 0 : g >= 255 ? 255 : Math.round(g);
        if (invert) g = 255 - g;
        lut[i] = OPAQUE_BLACK | (g << 16) | (g << 8) | g;
      }
      for (let i = 0; i < n; i++) out[i] = lut[values[i] - min];
      return;
    }
    for (let i = 0; i < n; i++) {
      const v = values[i];
      let g = (v - lo) * scale;
      g = g !== g || g <= 0 ? 0 : g >= 255 ? 255 : Math.round(g);
      if (invert && v === v) g = 255 - g;
      out[i] = OPAQUE_BLACK | (g << 16) | (g << 8) | g;
    }
  }

  function minimumWidth(frame) { return frame.dtype === 'int16' ? 1 : Math.max((frame.max - frame.min) / 1e4, 1e-6); }

  function fullWindow(frame) {
    const width = Math.max(frame.max - frame.min, minimumWidth(frame));
    return { center: (frame.min + frame.max) / 2, width };
  }

  function autoWindow(frame) {
    const values = frame.values, stride = Math.max(1, Math.floor(values.length / 65536));
    const sample = [];
    for (let i = 0; i < values.length; i += stride) if (values[i] === values[i]) sample.push(values[i]);
    if (!sample.length) return fullWindow(frame);
    const sorted = Float64Array.from(sample).sort();
    const at = (p) => {                                        // linear interpolation, like numpy.percentile
      const k = (sorted.length - 1) * p / 100, f = Math.floor(k), c = Math.min(f + 1, sorted.length - 1);
      return sorted[f] + (sorted[c] - sorted[f]) * (k - f);
    };
    const lo = at(0.5), hi = at(99.5);
    return { center: (lo + hi) / 2, width: Math.max(hi - lo, minimumWidth(frame)) };
  }

  function valueAt(frame, x, y) {
    if (!frame || x < 0 || y < 0 || x >= frame.width || y >= frame.height) return null;
    return frame.values[Math.floor(y) * frame.width + Math.floor(x)];
  }

  parts.render = { loadPixels, paint, greyOf, autoWindow, fullWindow, valueAt, minimumWidth };
})(window);
