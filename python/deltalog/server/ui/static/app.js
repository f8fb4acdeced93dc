// deltalog catalog pages (issue #47): one script, no build step, no dependencies.
//
// Safety rules this file keeps (docs/ui.md, "Security"):
// * every value from the server goes into the page as text (textContent / createTextNode /
//   SVG text nodes), never as markup: none of the DOM's HTML-parsing setters or writers is
//   used anywhere in this file (tests/test_ui_api.py checks);
// * no inline handlers: listeners are added here (the server's CSP allows no inline script);
// * the token lives in sessionStorage (this tab only) and travels only in the Authorization
//   header of fetch(): never in a URL, so never in a server log, history or Referer;
// * links are fragments (#/...) built from encodeURIComponent'd names.
"use strict";

(function () {
  const TOKEN_KEY = "deltalog.catalog.token";
  const main = document.getElementById("main");
  let me = null;

  // -- DOM helpers ------------------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "className") node.className = value;
      else if (key === "href") node.setAttribute("href", safeHref(value));
      else node.setAttribute(key, String(value));
    }
    append(node, children);
    return node;
  }
  function append(node, children) {
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  function safeHref(value) {
    const text = String(value);
    return text.startsWith("#/") ? text : "#/";
  }
  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }
  const SVG = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    if (text !== undefined) node.textContent = String(text);
    return node;
  }

  // -- formatting -------------------------------------------------------------------------
  function bytes(n) {
    if (n === null || n === undefined) return "?";
    const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let v = Number(n), i = 0;
    while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return (i === 0 ? String(v) : v.toFixed(v < 10 ? 2 : 1)) + " " + units[i];
  }
  function count(n) {
    return n === null || n === undefined ? "?" : Number(n).toLocaleString("en-US");
  }
  function when(ms) {
    if (ms === null || ms === undefined) return "?";
    const d = new Date(Number(ms));
    return isNaN(d) ? "?" : d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
  }
  function plural(n, one, many) {
    return count(n) + " " + (Number(n) === 1 ? one : many);
  }
  function json(value) {
    return typeof value === "string" ? value : JSON.stringify(value);
  }
  function path(parts) { return parts.map(encodeURIComponent).join("/"); }
  function dotted(parts) { return parts.join("."); }

  // -- the API ------------------------------------------------------------------------------
  class ApiError extends Error {
    constructor(status, message) { super(message); this.status = status; }
  }
  async function api(view, params) {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(params || {})) {
      if (Array.isArray(value)) value.forEach((v) => query.append(key, v));
      else if (value !== undefined && value !== null) query.append(key, value);
    }
    const headers = {};
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = "Bearer " + token;
    const response = await fetch("/ui/api/" + view + "?" + query.toString(), {
      headers, credentials: "omit", cache: "no-store", referrerPolicy: "no-referrer",
    });
    let body = null;
    try { body = await response.json(); } catch (e) { body = null; }
    if (!response.ok) {
      throw new ApiError(response.status, (body && body.error) || response.statusText);
    }
    return body;
  }
  function tableParams(name) {
    return { ns: name.slice(0, -1), t: name[name.length - 1] };
  }

  // -- signing in ---------------------------------------------------------------------------
  function showSignIn(reason) {
    me = null;
    document.getElementById("who").textContent = "";
    document.getElementById("sign-out").hidden = true;
    const input = el("input", { type: "password", id: "token", autocomplete: "off",
      placeholder: "paste a bearer token", "aria-label": "token" });
    const form = el("form", { className: "signin", id: "signin" },
      el("h1", {}, "Sign in"),
      el("p", {}, "Paste a token of this catalog server (",
        el("code", {}, "deltalog catalog token create"),
        "). It is kept in this browser tab only and sent in a request header, never in a URL."),
      reason ? el("p", { className: "error" }, reason) : null,
      input,
      el("button", { type: "submit", id: "signin-button" }, "Sign in"));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const token = input.value.trim();
      if (!token) return;
      sessionStorage.setItem(TOKEN_KEY, token);
      start();
    });
    append(clear(main), [form]);
    input.focus();
  }
  async function start() {
    try {
      me = await api("me");
    } catch (e) {
      if (e.status === 401) {
        const had = sessionStorage.getItem(TOKEN_KEY);
        sessionStorage.removeItem(TOKEN_KEY);
        showSignIn(had ? "The server refused the token: " + e.message : null);
        return;
      }
      showError(e);
      return;
    }
    document.getElementById("who").textContent = me.name + " (" + me.role + ")";
    document.getElementById("sign-out").hidden = !me.authentication;
    render();
  }
  document.getElementById("sign-out").addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    showSignIn(null);
  });

  // -- routing (the fragment: #/ns/a/b, #/table/a/b/t, #/table/a/b/t/history, #/server) ----
  function parseRoute() {
    const raw = location.hash.replace(/^#\/?/, "");
    const parts = raw === "" ? [] : raw.split("/").map((p) => {
      try { return decodeURIComponent(p); } catch (e) { return p; }
    });
    const kind = parts.shift() || "ns";
    return { kind, parts };
  }
  let generation = 0;
  async function render() {
    if (me === null) return;
    const mine = ++generation;
    const route = parseRoute();
    clear(main);
    main.appendChild(el("p", { className: "muted", id: "loading" }, "Loading…"));
    try {
      let page;
      if (route.kind === "table" && route.parts.length >= 1) {
        const tabs = ["history", "health", "overview"];
        let tab = "overview";
        if (route.parts.length >= 2 && tabs.includes(route.parts[route.parts.length - 1])
            && route.parts[route.parts.length - 2] === "~") {
          tab = route.parts.pop();
          route.parts.pop();
        }
        page = await tablePage(route.parts, tab);
      } else if (route.kind === "server") {
        page = await serverPage();
      } else if (route.kind === "search") {
        page = await searchPage(route.parts.join("/"));
      } else {
        page = await namespacePage(route.kind === "ns" ? route.parts : []);
      }
      if (mine !== generation) return;
      append(clear(main), [page]);
    } catch (e) {
      if (mine !== generation) return;
      if (e.status === 401) { start(); return; }
      showError(e);
    }
  }
  function showError(e) {
    const text = e.status === 403
      ? "Refused (403): " + e.message
      : (e.status ? "Error " + e.status + ": " : "Error: ") + e.message;
    append(clear(main), [el("p", { className: "error", id: "page-error" }, text)]);
  }
  window.addEventListener("hashchange", render);

  // -- search -------------------------------------------------------------------------------
  const search = document.getElementById("search");
  document.getElementById("search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = "#/search/" + encodeURIComponent(search.value.trim());
  });
  let searchTimer = null;
  search.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => {
      location.hash = "#/search/" + encodeURIComponent(search.value.trim());
    }, 300);
  });
  async function searchPage(text) {
    const found = await api("search", { q: text });
    const rows = found.tables.map((t) => {
      const name = [...t.namespace, t.name];
      return el("tr", {},
        el("td", {}, el("a", { href: "#/table/" + path(name) }, dotted(name))),
        el("td", {}, formatBadge(t)),
        el("td", {}, when(t.updated_ms), " ", el("span", { className: "muted" }, t.updated_by || "")));
    });
    return el("section", { id: "search-results" },
      el("h1", {}, "Tables matching “", text, "”"),
      rows.length ? el("table", { className: "grid" },
        el("thead", {}, el("tr", {}, el("th", {}, "Table"), el("th", {}, "Format"),
          el("th", {}, "Last change"))),
        el("tbody", {}, rows)) : el("p", { className: "muted" }, "No table matches."),
      found.complete ? null : el("p", { className: "muted" }, "Only the first matches are shown."));
  }

  // -- namespaces -----------------------------------------------------------------------------
  function crumbs(names, last) {
    const out = [el("a", { href: "#/" }, "catalogs")];
    names.forEach((name, i) => {
      out.push(el("span", {}, "›"));
      out.push(el("a", { href: "#/ns/" + path(names.slice(0, i + 1)) }, name));
    });
    if (last) out.push(el("span", {}, "›"), el("span", {}, last));
    return el("div", { className: "crumbs" }, out);
  }
  function formatBadge(t) {
    return [el("span", { className: "badge" }, "Delta"),
      t.catalog_managed ? el("span", { className: "badge managed" }, "catalog-managed") : null];
  }
  async function namespacePage(names) {
    const ns = await api("namespace", { ns: names });
    const title = names.length === 0 ? "Catalogs" : names.length === 1
      ? "Catalog " + names[0] : "Namespace " + dotted(names);
    const section = el("section", { id: "namespace" }, crumbs(names), el("h1", {}, title));
    const props = Object.entries(ns.properties || {});
    if (props.length) {
      section.appendChild(el("h2", {}, "Properties"));
      section.appendChild(keyValues(props, "namespace-properties"));
    }
    section.appendChild(el("h2", {}, names.length === 0 ? "Catalogs" : "Namespaces"));
    section.appendChild(ns.namespaces.length
      ? el("ul", { id: "namespaces" }, ns.namespaces.map((child) =>
        el("li", {}, el("a", { href: "#/ns/" + path([...names, child]) }, child))))
      : el("p", { className: "muted" }, "None."));
    section.appendChild(el("h2", {}, "Tables"));
    if (!ns.tables.length) {
      section.appendChild(el("p", { className: "muted" }, "None."));
      return section;
    }
    const body = el("tbody", {});
    const pending = [];
    for (const t of ns.tables) {
      const name = [...names, t.name];
      const size = el("td", { className: "num" }, "…");
      const files = el("td", { className: "num" }, "…");
      const version = el("td", { className: "num" }, t.latest_version ?? "…");
      body.appendChild(el("tr", {},
        el("td", {}, el("a", { href: "#/table/" + path(name) }, t.name)),
        el("td", {}, formatBadge(t)), version, size, files,
        el("td", {}, when(t.updated_ms), " ", el("span", { className: "muted" }, t.updated_by || ""))));
      pending.push({ name, size, files, version });
    }
    section.appendChild(el("table", { className: "grid", id: "tables" },
      el("thead", {}, el("tr", {}, el("th", {}, "Table"), el("th", {}, "Format"),
        el("th", { className: "num" }, "Version"), el("th", { className: "num" }, "Size"),
        el("th", { className: "num" }, "Files"), el("th", {}, "Last commit"))), body));
    fillSummaries(pending);
    return section;
  }
  async function fillSummaries(pending) {
    // Four at a time: each may load a table's snapshot on the server.
    const queue = pending.slice();
    async function worker() {
      while (queue.length) {
        const row = queue.shift();
        try {
          const s = await api("summary", tableParams(row.name));
          row.size.textContent = bytes(s.bytes);
          row.files.textContent = count(s.files);
          row.version.textContent = String(s.version);
        } catch (e) {
          row.size.textContent = "?";
          row.files.textContent = "?";
          row.size.title = e.message;
        }
      }
    }
    await Promise.all([worker(), worker(), worker(), worker()]);
  }
  function keyValues(entries, id) {
    return el("table", { className: "grid", id },
      el("thead", {}, el("tr", {}, el("th", {}, "Key"), el("th", {}, "Value"))),
      el("tbody", {}, entries.map(([k, v]) =>
        el("tr", {}, el("td", {}, el("code", {}, k)), el("td", {}, json(v))))));
  }

  // -- a table --------------------------------------------------------------------------------
  function card(label, value, id) {
    return el("div", { className: "card", id },
      el("div", { className: "label" }, label), el("div", { className: "value" }, value));
  }
  async function tablePage(name, tab) {
    const base = "#/table/" + path(name);
    const section = el("section", { id: "table-page" },
      crumbs(name.slice(0, -1), name[name.length - 1]),
      el("h1", { id: "table-name" }, name[name.length - 1]),
      el("nav", { className: "tabs" }, [["overview", base], ["history", base + "/~/history"],
        ["health", base + "/~/health"]].map(([label, href]) =>
        el("a", { href, className: label === tab ? "active" : null, id: "tab-" + label },
          label[0].toUpperCase() + label.slice(1)))));
    if (tab === "history") section.appendChild(await historyView(name));
    else if (tab === "health") section.appendChild(await healthView(name));
    else section.appendChild(await overview(name));
    return section;
  }
  async function overview(name) {
    const t = await api("table", tableParams(name));
    const s = t.summary;
    const out = el("div", { id: "overview" },
      el("div", { className: "cards" },
        card("Format", t.catalog_managed ? "Delta, catalog-managed" : "Delta", "card-format"),
        card("Version", String(t.version), "card-version"),
        card("Last commit", when(s.timestamp), "card-last-commit"),
        card("Size", bytes(s.bytes), "card-size"),
        card("Files", count(s.files), "card-files"),
        card("Rows", count(s.rows), "card-rows")),
      el("p", {}, el("span", { className: "muted" }, "Location "), el("code", {}, t.location)));
    if (t.description) out.appendChild(el("p", { id: "description" }, t.description));
    out.appendChild(el("h2", {}, "Columns"));
    out.appendChild(el("table", { className: "grid", id: "columns" },
      el("thead", {}, el("tr", {}, ["Column", "Type", "Nullable", "Comment", "Column mapping",
        "Generated / identity / default"].map((h) => el("th", {}, h)))),
      el("tbody", {}, t.columns.map((c) => {
        const label = el("span", { className: "indent" }, c.path[c.path.length - 1]);
        label.style.paddingLeft = (c.depth * 1.4) + "em";
        const extra = [];
        if (c.generated) extra.push("generated always as " + c.generated);
        if (c.identity) extra.push("identity (start " + c.identity.start + ", step " + c.identity.step + ")");
        if (c.default) extra.push("default " + c.default);
        return el("tr", {},
          el("td", {}, label), el("td", {}, el("code", {}, c.type)),
          el("td", {}, c.nullable ? "yes" : "no"), el("td", { className: "comment" }, c.comment || ""),
          el("td", {}, c.physical_name ? "id " + c.column_id + ", " + c.physical_name : ""),
          el("td", {}, extra.join("; ")));
      }))));
    out.appendChild(el("h2", {}, "Layout"));
    out.appendChild(el("p", { id: "layout" },
      t.partition_columns.length ? "Partitioned by " + t.partition_columns.join(", ")
        : t.clustering_columns.length ? "Clustered by " + t.clustering_columns.join(", ")
          : "Not partitioned or clustered",
      ". Column mapping: " + t.column_mapping + "."));
    out.appendChild(el("h2", {}, "Protocol"));
    const p = t.protocol;
    out.appendChild(el("p", { id: "protocol" }, "Reader version " + p.min_reader_version +
      ", writer version " + p.min_writer_version + "."));
    const features = [...new Set([...(p.reader_features || []), ...(p.writer_features || [])])].sort();
    if (features.length) {
      out.appendChild(el("p", { id: "features" }, features.map((f) =>
        el("span", { className: "badge" }, f,
          (p.reader_features || []).includes(f) ? " (reader+writer)" : " (writer)"))));
    }
    out.appendChild(el("h2", {}, "Properties"));
    const props = Object.entries(t.properties).sort();
    out.appendChild(props.length ? keyValues(props, "properties") : el("p", { className: "muted" }, "None."));
    const catalogProps = Object.entries(t.catalog_properties).sort();
    if (catalogProps.length) {
      out.appendChild(el("h3", {}, "Catalog properties"));
      out.appendChild(keyValues(catalogProps, "catalog-properties"));
    }
    if (t.catalog_managed) {
      out.appendChild(el("h2", {}, "Unpublished commits"));
      out.appendChild(t.unpublished.length ? el("table", { className: "grid", id: "unpublished" },
        el("thead", {}, el("tr", {}, el("th", {}, "Version"), el("th", {}, "Ratified"), el("th", {}, "Held as"))),
        el("tbody", {}, t.unpublished.map((c) => el("tr", {},
          el("td", {}, String(c.version)), el("td", {}, when(c.timestamp)),
          el("td", {}, c.inline ? "inline in the catalog" : c.staged_path)))))
        : el("p", { className: "muted", id: "unpublished" }, "None: every ratified commit is published."));
    }
    return out;
  }

  async function historyView(name) {
    const h = await api("history", { ...tableParams(name), limit: 100 });
    const out = el("div", { id: "history" });
    const versions = h.history.map((e) => e.version);
    if (versions.length >= 2) {
      const from = el("select", { id: "diff-from", "aria-label": "from version" },
        versions.map((v) => el("option", { value: v }, String(v))));
      const to = el("select", { id: "diff-to", "aria-label": "to version" },
        versions.map((v) => el("option", { value: v }, String(v))));
      from.value = String(versions[1]);
      to.value = String(versions[0]);
      const result = el("div", { id: "diff" });
      const button = el("button", { type: "button", id: "diff-button" }, "Compare");
      button.addEventListener("click", async () => {
        clear(result).appendChild(el("p", { className: "muted" }, "Comparing…"));
        try {
          const d = await api("diff", { ...tableParams(name), from: from.value, to: to.value });
          append(clear(result), [diffView(d)]);
        } catch (e) {
          append(clear(result), [el("p", { className: "error" }, e.message)]);
        }
      });
      out.appendChild(el("div", { className: "diff-form" }, "Compare schema and properties of version",
        from, "with version", to, button));
      out.appendChild(result);
    }
    out.appendChild(el("table", { className: "grid", id: "history-table" },
      el("thead", {}, el("tr", {}, ["Version", "Committed", "Operation", "Principal",
        "Writer", "Parameters", "Metrics"].map((x) => el("th", {}, x)))),
      el("tbody", {}, h.history.map((e) => el("tr", {},
        el("td", { className: "num" }, String(e.version)),
        el("td", {}, when(e.timestamp)),
        el("td", {}, e.operation || ""),
        el("td", {}, e.principal || el("span", { className: "muted" }, "—")),
        el("td", {}, [e.user, e.engine].filter(Boolean).join(" · ")),
        el("td", {}, pairs(e.parameters)),
        el("td", {}, pairs(e.metrics)))))));
    return out;
  }
  function pairs(map) {
    const entries = Object.entries(map || {});
    return entries.map(([k, v]) => el("div", {}, el("code", {}, k), " = ", json(v)));
  }
  function diffView(d) {
    const section = el("div", {}, el("h3", {}, "From version " + d.from + " to version " + d.to));
    const block = (title, rows, id) => {
      section.appendChild(el("h3", {}, title));
      section.appendChild(rows.length ? el("table", { className: "grid", id },
        el("thead", {}, el("tr", {}, el("th", {}, "What"), el("th", {}, "Change"),
          el("th", {}, "Before"), el("th", {}, "After"))),
        el("tbody", {}, rows.map((r) => el("tr", {}, el("td", {}, el("code", {}, r.key)),
          el("td", { className: "change-" + r.change }, r.change),
          el("td", {}, r.old === null ? "" : json(r.old)),
          el("td", {}, r.new === null ? "" : json(r.new))))))
        : el("p", { className: "muted" }, "No change."));
    };
    block("Columns", d.columns, "diff-columns");
    block("Properties", d.properties, "diff-properties");
    block("Partitioning, description, protocol", d.other, "diff-other");
    return section;
  }

  // -- charts (SVG drawn here) --------------------------------------------------------------
  const W = 460, H = 220, PAD = { l: 56, r: 12, t: 12, b: 46 };
  function frame(id) {
    const plot = svg("svg", { viewBox: "0 0 " + W + " " + H, class: "plot", role: "img", id });
    plot.appendChild(svg("line", { x1: PAD.l, y1: H - PAD.b, x2: W - PAD.r, y2: H - PAD.b, class: "axis" }));
    plot.appendChild(svg("line", { x1: PAD.l, y1: PAD.t, x2: PAD.l, y2: H - PAD.b, class: "axis" }));
    return plot;
  }
  function yAxis(plot, max, format) {
    for (const f of [0, 0.5, 1]) {
      const y = H - PAD.b - f * (H - PAD.t - PAD.b);
      plot.appendChild(svg("text", { x: PAD.l - 4, y: y + 3, "text-anchor": "end" }, format(max * f)));
    }
  }
  function barChart(id, labels, values, opts) {
    const plot = frame(id);
    const max = Math.max(1, ...values);
    const n = Math.max(1, values.length);
    const width = (W - PAD.l - PAD.r) / n;
    yAxis(plot, max, opts.format || count);
    values.forEach((v, i) => {
      const h = (v / max) * (H - PAD.t - PAD.b);
      const bar = svg("rect", { x: PAD.l + i * width + 1, y: H - PAD.b - h,
        width: Math.max(1, width - 2), height: Math.max(v > 0 ? 1 : 0, h),
        class: "bar" + (opts.alt && opts.alt(i) ? " alt" : "") });
      bar.appendChild(svg("title", {}, labels[i] + ": " + (opts.format || count)(v)));
      plot.appendChild(bar);
      const every = Math.ceil(n / (opts.ticks || 10));
      if (i % every === 0) {
        plot.appendChild(svg("text", { x: PAD.l + i * width + width / 2, y: H - PAD.b + 12,
          "text-anchor": "middle" }, labels[i]));
      }
    });
    if (opts.marker !== undefined && opts.marker !== null) {
      const x = PAD.l + opts.marker * width;
      plot.appendChild(svg("line", { x1: x, y1: PAD.t, x2: x, y2: H - PAD.b, class: "marker" }));
      plot.appendChild(svg("text", { x: x + 3, y: PAD.t + 10, class: "marker-label" }, opts.markerLabel));
    }
    if (opts.xLabel) plot.appendChild(svg("text", { x: W / 2, y: H - 8, "text-anchor": "middle" }, opts.xLabel));
    return plot;
  }
  function lineChart(id, xs, ys, opts) {
    const plot = frame(id);
    const known = ys.map((y, i) => [xs[i], y]).filter(([, y]) => y !== null && y !== undefined);
    const max = Math.max(1, ...known.map(([, y]) => y));
    const minX = Math.min(...xs), maxX = Math.max(...xs);
    const sx = (x) => PAD.l + (maxX === minX ? 0.5 : (x - minX) / (maxX - minX)) * (W - PAD.l - PAD.r);
    const sy = (y) => H - PAD.b - (y / max) * (H - PAD.t - PAD.b);
    yAxis(plot, max, opts.format || count);
    if (known.length) {
      plot.appendChild(svg("polyline", { class: "line",
        points: known.map(([x, y]) => sx(x).toFixed(1) + "," + sy(y).toFixed(1)).join(" ") }));
      for (const [x, y] of known) {
        const dot = svg("circle", { cx: sx(x), cy: sy(y), r: 2.5, class: "dot" });
        dot.appendChild(svg("title", {}, opts.xName + " " + x + ": " + (opts.format || count)(y)));
        plot.appendChild(dot);
      }
    }
    plot.appendChild(svg("text", { x: PAD.l, y: H - PAD.b + 12 }, String(minX)));
    plot.appendChild(svg("text", { x: W - PAD.r, y: H - PAD.b + 12, "text-anchor": "end" }, String(maxX)));
    if (opts.xLabel) plot.appendChild(svg("text", { x: W / 2, y: H - 8, "text-anchor": "middle" }, opts.xLabel));
    return plot;
  }
  function chart(id, title, plot, note) {
    return el("figure", { className: "chart", id },
      el("figcaption", {}, title), plot, note ? el("div", { className: "note" }, note) : null);
  }

  async function healthView(name) {
    const h = await api("health", tableParams(name));
    const out = el("div", { id: "health" });
    const dv = h.deletion_vectors, cp = h.checkpoint;
    out.appendChild(el("div", { className: "cards" },
      card("Files", count(h.files), "health-files"),
      card("Size", bytes(h.bytes), "health-size"),
      card("Small files", count(h.small_files), "health-small"),
      card("Rows deleted by DVs", (dv.share * 100).toFixed(1) + "%", "health-dv"),
      card("Versions since checkpoint", String(cp.since), "health-checkpoint")));
    out.appendChild(el("h2", {}, "What to do"));
    if (h.advice.length) {
      for (const a of h.advice) {
        out.appendChild(el("div", { className: "advice" },
          el("strong", {}, a.problem), el("p", {}, a.why),
          el("pre", { className: "command" }, a.command),
          a.sql ? el("pre", { className: "command" }, a.sql) : null));
      }
    } else {
      out.appendChild(el("p", { className: "healthy", id: "no-advice" }, "Nothing to do: no problem found."));
    }
    const charts = el("div", { className: "charts" });
    // File sizes against the target.
    const hist = h.histogram;
    const labels = hist.edges.map((e) => bytes(e).replace(/\.0+ /, " "));
    const target = Math.log2(h.target_file_size) - Math.log2(hist.edges[0]);
    charts.appendChild(chart("chart-sizes", "File sizes",
      barChart("plot-sizes", labels, hist.counts, { marker: target, markerLabel: "target " + bytes(h.target_file_size), xLabel: "file size (lower bound of each bucket)", ticks: 7 }),
      plural(h.small_files, "file", "files") + " under a quarter of the target size."));
    // Files and rows per partition.
    const part = h.partitions;
    if (part.count) {
      const names = part.top.map((p) => p.values.map((v) => v === null ? "null" : v).join("/"));
      charts.appendChild(chart("chart-partition-files", "Files per partition",
        barChart("plot-partition-files", names, part.top.map((p) => p.files), { xLabel: part.columns.join(", ") }),
        plural(part.count, "partition", "partitions") + (part.others ? "; the " + part.top.length + " with the most files shown" : "") + "."));
      charts.appendChild(chart("chart-partition-rows", "Rows per partition",
        barChart("plot-partition-rows", names, part.top.map((p) => p.rows || 0), { xLabel: part.columns.join(", ") })));
    }
    // Deletion vectors.
    charts.appendChild(chart("chart-dv", "Rows deleted by deletion vectors",
      barChart("plot-dv", ["live rows", "deleted rows"], [Math.max(0, dv.rows - dv.deleted_rows), dv.deleted_rows], { alt: (i) => i === 1 }),
      plural(dv.files, "file carries", "files carry") + " a deletion vector."));
    // Checkpoint.
    charts.appendChild(chart("chart-checkpoint", "Versions since the last checkpoint",
      barChart("plot-checkpoint", ["since checkpoint", "interval"], [cp.since, cp.interval], { alt: (i) => i === 1 }),
      cp.version === null ? "No checkpoint: every load replays every commit." : "Last checkpoint: version " + cp.version + "."));
    // Commits over time and size over versions.
    const versions = h.versions;
    if (versions.length) {
      const times = versions.map((v) => v.timestamp);
      const span = Math.max(...times) - Math.min(...times);
      const bucket = span > 14 * 86400e3 ? 86400e3 : span > 2 * 86400e3 ? 3600e3 * 6 : 3600e3;
      const counts = new Map();
      for (const t of times) {
        const key = Math.floor(t / bucket) * bucket;
        counts.set(key, (counts.get(key) || 0) + 1);
      }
      const keys = [...counts.keys()].sort((a, b) => a - b);
      charts.appendChild(chart("chart-commits", "Commits over time",
        barChart("plot-commits", keys.map((k) => when(k).slice(0, bucket >= 86400e3 ? 10 : 16)), keys.map((k) => counts.get(k)), { xLabel: bucket >= 86400e3 ? "per day" : bucket > 3600e3 ? "per 6 hours" : "per hour" }),
        versions.length === 1 ? "The only version." : "The " + versions.length + " most recent versions."));
      charts.appendChild(chart("chart-size", "Table size over versions",
        lineChart("plot-size", versions.map((v) => v.version), versions.map((v) => v.bytes), { format: bytes, xName: "version", xLabel: "version" })));
      charts.appendChild(chart("chart-file-count", "Files over versions",
        lineChart("plot-file-count", versions.map((v) => v.version), versions.map((v) => v.files), { xName: "version", xLabel: "version" })));
    }
    out.appendChild(el("h2", {}, "Figures"));
    out.appendChild(charts);
    return out;
  }

  // -- the server (admins) --------------------------------------------------------------------
  async function serverPage() {
    const s = await api("server");
    const section = el("section", { id: "server" }, el("h1", {}, "Server"));
    section.appendChild(el("h2", {}, "Principals"));
    section.appendChild(!s.authentication ? el("p", { className: "muted" }, "Authentication is off (no tokens file): every request is the anonymous admin.")
      : el("table", { className: "grid", id: "principals" },
        el("thead", {}, el("tr", {}, ["Name", "Role", "State", "Created", "Expires"].map((x) => el("th", {}, x)))),
        el("tbody", {}, s.principals.map((p) => el("tr", {},
          el("td", {}, p.name), el("td", {}, p.role), el("td", {}, p.state),
          el("td", {}, p.created || ""), el("td", {}, p.expires || ""))))));
    section.appendChild(el("h2", {}, "Recent refusals (403, 409)"));
    section.appendChild(s.refusals.length ? el("table", { className: "grid", id: "refusals" },
      el("thead", {}, el("tr", {}, ["When", "Principal", "Request", "Status", "Code", "Message"].map((x) => el("th", {}, x)))),
      el("tbody", {}, s.refusals.map((r) => el("tr", {},
        el("td", {}, when(r.at_ms)), el("td", {}, r.principal || ""),
        el("td", {}, el("code", {}, r.method + " " + r.path)), el("td", {}, String(r.status)),
        el("td", {}, r.code === null ? "" : String(r.code)), el("td", {}, r.message || "")))))
      : el("p", { className: "muted", id: "refusals" }, "None recorded."));
    return section;
  }

  start();
})();
