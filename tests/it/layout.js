/* Injected into a copy of a report by the layout harness (tests/it/common.rs): */
/* measures every inline <svg> as Chromium laid it out and writes the findings */
/* as JSON into a <pre> appended to the body, which --dump-dom carries out. */
(function () {
  const TOL = 0.5; /* sub-pixel rounding is not a clip or an overlap */
  function box(r) { return { l: r.left, t: r.top, r: r.right, b: r.bottom }; }
  function inside(a, o) {
    return a.l >= o.l - TOL && a.t >= o.t - TOL && a.r <= o.r + TOL && a.b <= o.b + TOL;
  }
  function overlap(a, b) {
    return Math.min(a.r, b.r) - Math.max(a.l, b.l) > TOL &&
           Math.min(a.b, b.b) - Math.max(a.t, b.t) > TOL;
  }
  function chartName(svg, i) {
    const t = svg.querySelector('title');
    return (svg.getAttribute('aria-label') || (t && t.textContent) ||
            svg.getAttribute('data-workload') || svg.getAttribute('class') || ('svg ' + i)).trim();
  }
  const out = { width: window.innerWidth, charts: [], tables: [], codes: [] };
  document.querySelectorAll('svg').forEach(function (svg, i) {
    const sb = box(svg.getBoundingClientRect());
    const c = {
      name: chartName(svg, i), width: sb.r - sb.l, height: sb.b - sb.t,
      texts: 0, shapes: svg.querySelectorAll('rect,circle,path,line').length,
      min_font_px: null, clipped: [], overlaps: [], on_curve: [], crossed: []
    };
    const texts = [];
    svg.querySelectorAll('text').forEach(function (t) {
      const s = t.textContent.trim();
      if (!s) return;
      const b = box(t.getBoundingClientRect());
      if (b.r - b.l <= 0) return;
      texts.push({ s: s, b: b });
      const fs = (b.b - b.t);
      if (c.min_font_px === null || fs < c.min_font_px) c.min_font_px = fs;
      if (!inside(b, sb)) c.clipped.push(s);
    });
    c.texts = texts.length;
    for (let a = 0; a < texts.length; a++)
      for (let b = a + 1; b < texts.length; b++)
        if (overlap(texts[a].b, texts[b].b)) c.overlaps.push([texts[a].s, texts[b].s]);
    /* Labels must not sit on a drawn curve: sample each <path> along its length. */
    svg.querySelectorAll('path').forEach(function (p) {
      const m = p.getScreenCTM();
      if (!m) return;
      const len = p.getTotalLength();
      const hit = new Set();
      for (let d = 0; d <= len; d += 1) {
        const q = p.getPointAtLength(d);
        const x = m.a * q.x + m.c * q.y + m.e, y = m.b * q.x + m.d * q.y + m.f;
        texts.forEach(function (t) {
          if (x > t.b.l + TOL && x < t.b.r - TOL && y > t.b.t + TOL && y < t.b.b - TOL) hit.add(t.s);
        });
      }
      hit.forEach(function (s) { c.on_curve.push(s); });
    });
    /* No label crossed by a straight line (a ceiling, a whisker, a threshold, */
    /* a grid line): walk each <line> in half-pixel steps through the text boxes. */
    svg.querySelectorAll('line').forEach(function (ln) {
      const m = ln.getScreenCTM();
      if (!m) return;
      const p = function (x, y) { return [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]; };
      const a = p(ln.x1.baseVal.value, ln.y1.baseVal.value);
      const b = p(ln.x2.baseVal.value, ln.y2.baseVal.value);
      const steps = Math.max(1, Math.ceil(Math.hypot(b[0] - a[0], b[1] - a[1]) * 2));
      const hit = new Set();
      for (let i = 0; i <= steps; i++) {
        const x = a[0] + (b[0] - a[0]) * i / steps, y = a[1] + (b[1] - a[1]) * i / steps;
        texts.forEach(function (t) {
          if (x > t.b.l + TOL && x < t.b.r - TOL && y > t.b.t + TOL && y < t.b.b - TOL) hit.add(t.s);
        });
      }
      const what = ln.getAttribute('class') || 'line';
      hit.forEach(function (s) { c.crossed.push([s, what]); });
    });
    out.charts.push(c);
  });
  document.querySelectorAll('table').forEach(function (t) {
    const r = t.getBoundingClientRect();
    out.tables.push({
      class: t.getAttribute('class') || '', rows: t.rows.length,
      cells: t.querySelectorAll('td').length, width: r.width,
      overflows: r.right > document.documentElement.clientWidth + TOL
    });
  });
  document.querySelectorAll('pre code').forEach(function (c) { out.codes.push(c.textContent); });
  out.page_overflows = document.documentElement.scrollWidth > document.documentElement.clientWidth;
  const pre = document.createElement('pre');
  pre.id = 'layout-findings';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
