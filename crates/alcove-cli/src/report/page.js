// Draws the report from the JSON in #report-data. Every text from the
// transcripts goes into the page as a text node (textContent), never as
// markup. `#selftest` in the URL clicks every lane once drawn and writes
// what each click showed into the element #selftest (the e2e test reads it).
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var app = document.getElementById("app");
  var FOLD_CHARS = 600, FOLD_LINES = 12;

  function el(tag, cls, children) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    (children || []).forEach(function (child) {
      if (child === null || child === undefined) return;
      node.appendChild(typeof child === "string" || typeof child === "number"
        ? document.createTextNode(String(child)) : child);
    });
    return node;
  }
  function num(n) { return (n || 0).toLocaleString("en-US"); }
  function dollars(cost) { return cost === null || cost === undefined ? "not priced" : "$" + cost.toFixed(4); }
  function secs(ms) { return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s"; }
  function total(t) { return t.input + t.cache_read + t.cache_write + t.output; }
  function tokensText(t) {
    return num(t.input) + " in · " + num(t.cache_read) + " cache read · " +
      num(t.cache_write) + " cache write · " + num(t.output) + " out";
  }
  function status(s) { return el("span", "status s-" + s, [s]); }
  // Long text folds into <details>, showing its first line.
  function textBlock(text, cls) {
    var pre = el("pre", cls, [text]);
    if (text.length <= FOLD_CHARS && text.split("\n").length <= FOLD_LINES) return pre;
    var first = text.split("\n")[0].slice(0, 120);
    var details = el("details", null, [el("summary", null, [first + " … (" + num(text.length) + " characters)"]), pre]);
    return details;
  }

  var agents = data.agents;
  var byPath = {};
  agents.forEach(function (a) { byPath[a.path] = a; });
  var start = data.start, span = Math.max(1, data.end - data.start);
  var totals = { input: 0, cache_read: 0, cache_write: 0, output: 0 }, turns = 0, cost = 0, calls = 0;
  agents.forEach(function (a) {
    ["input", "cache_read", "cache_write", "output"].forEach(function (k) { totals[k] += a.tokens[k]; });
    turns += a.turns;
    if (a.cost !== null && a.cost !== undefined) cost += a.cost;
    a.spans.forEach(function (s) { if (s.kind === "tool" || s.kind === "wait") calls += 1; });
  });

  // The summary.
  var header = el("header", null, [el("h1", null, ["alcove session ", el("span", "muted", [data.session_id])])]);
  var summary = el("div", "summary", []);
  function row(name, value) { summary.appendChild(el("div", null, [name])); summary.appendChild(el("div", null, [value])); }
  row("task", textBlock(data.task || "(none)"));
  row("outcome", el("span", null, [status(data.outcome), data.error ? " " + data.error : ""]));
  if (data.answer) row("answer", textBlock(data.answer));
  row("model", data.model);
  row("workspace", data.workspace);
  row("started", start ? new Date(start).toISOString() : "unknown");
  row("wall time", secs(data.end - data.start));
  header.appendChild(summary);
  var boxes = el("div", "totals", []);
  function box(name, value) { boxes.appendChild(el("div", null, [el("b", null, [value]), name])); }
  box("agents", num(agents.length));
  box("turns", num(turns));
  box("uncached input", num(totals.input));
  box("cache read", num(totals.cache_read));
  box("cache write", num(totals.cache_write));
  box("output", num(totals.output));
  box("cost", data.priced ? dollars(cost) : "not priced");
  box("tool calls", num(calls));
  box("failed commands", num(data.failed_commands.length));
  header.appendChild(boxes);
  app.appendChild(header);

  var costly = agents.slice().sort(function (a, b) {
    return data.priced ? (b.cost || 0) - (a.cost || 0) : total(b.tokens) - total(a.tokens);
  }).slice(0, 5);
  var costTable = el("table", "costliest", [el("tr", null, [el("th", null, ["agent"]), el("th", null, ["status"]),
    el("th", null, ["tokens"]), el("th", null, ["cost"])])]);
  costly.forEach(function (a) {
    var tr = el("tr", null, [el("td", null, [a.path + (a.description ? " — " + a.description : "")]), el("td", null, [status(a.status)]),
      el("td", null, [num(total(a.tokens))]), el("td", null, [dollars(a.cost)])]);
    tr.style.cursor = "pointer";
    tr.addEventListener("click", function () { show(a.path); });
    costTable.appendChild(tr);
  });
  var sideBySide = el("section", null, [el("h2", null, ["Costliest agents"]), costTable]);
  if (data.failed_commands.length) {
    sideBySide.appendChild(el("h2", null, ["Failed commands"]));
    var failed = el("table", "failed", [el("tr", null, [el("th", null, ["agent"]), el("th", null, ["command"]),
      el("th", null, ["result"]), el("th", null, ["output"])])]);
    data.failed_commands.slice(0, 200).forEach(function (f) {
      failed.appendChild(el("tr", null, [el("td", null, [f.agent]), el("td", null, [el("pre", null, [f.command])]),
        el("td", null, [f.result]), el("td", null, [el("pre", null, [f.output])])]));
    });
    sideBySide.appendChild(failed);
    if (data.failed_commands.length > 200) sideBySide.appendChild(el("div", "muted", ["and " + num(data.failed_commands.length - 200) + " more"]));
  }
  var notes = data.notes.slice();
  if (data.unreadable_lines) notes.unshift(num(data.unreadable_lines) + " transcript line(s) could not be read (a line torn by a crash is one)");
  if (notes.length) {
    sideBySide.appendChild(el("h2", null, ["Notes"]));
    notes.forEach(function (n) { sideBySide.appendChild(el("div", "muted", [n])); });
  }
  app.appendChild(sideBySide);

  // The timeline: one lane per agent, children under their parent.
  var section = el("section", null, [el("h2", null, ["Timeline"])]);
  var legend = el("div", "legend", []);
  [["k-request", "model request"], ["k-tool", "tool call"], ["err", "failed"], ["k-wait", "waiting on agents"],
    ["k-queued", "waiting to start (a slot, the budget, a worktree)"], ["k-retry", "retry back-off"], ["k-compaction", "compaction"]].forEach(function (entry) {
    legend.appendChild(el("span", null, [el("i", entry[0], []), entry[1]]));
  });
  section.appendChild(legend);
  var axis = el("div", "axis", [el("div", null, []), el("div", "ticks", [])]);
  for (var i = 0; i <= 4; i += 1) {
    var tick = el("span", null, ["+" + secs(span * i / 4)]);
    tick.style.left = (i * 25) + "%";
    axis.lastChild.appendChild(tick);
  }
  section.appendChild(axis);
  var timeline = el("div", "timeline", []);
  var lanes = {};
  function makeLane(a) {
    var label = el("div", "label", [el("span", "path", [a.path]), status(a.status), " ", a.description,
      el("span", "tokens", [num(a.turns) + (a.turns === 1 ? " turn · " : " turns · ") + tokensText(a.tokens)])]);
    label.style.paddingLeft = (8 + 16 * Math.min(a.depth, 12)) + "px";
    label.title = a.path + " " + a.description;
    var track = el("div", "track", []);
    a.spans.forEach(function (s) {
      var bar = el("div", "bar k-" + s.kind + (s.error ? " err" : "") + (s.open ? " open" : ""), []);
      bar.style.left = ((s.start - start) / span * 100) + "%";
      if (s.kind !== "compaction") bar.style.width = (Math.max(0, s.end - s.start) / span * 100) + "%";
      bar.title = s.label + " (" + secs(s.end - s.start) + (s.open ? ", never finished" : "") + ")";
      bar.setAttribute("data-ms", String(s.end - s.start));
      bar.addEventListener("click", function (event) { event.stopPropagation(); show(a.path, s.item); });
      track.appendChild(bar);
    });
    var lane = el("div", "lane", [label, track]);
    lane.setAttribute("data-agent", a.path);
    lane.setAttribute("data-status", a.status);
    lane.setAttribute("data-tokens", [a.tokens.input, a.tokens.cache_read, a.tokens.cache_write, a.tokens.output].join(" "));
    lane.addEventListener("click", function () { show(a.path); });
    lanes[a.path] = lane;
    return lane;
  }

  // A workflow run is a group: a header with its figures, then one group
  // per phase (in the order the phases appeared) holding its agents' lanes,
  // each with the lanes of that agent's own children beneath it.
  var runOf = {}, placed = {};
  (data.runs || []).forEach(function (r) {
    r.phases.forEach(function (p) { p.agents.forEach(function (path) { runOf[path] = r; }); });
  });
  function place(a, into) {
    if (placed[a.path]) return;
    placed[a.path] = true;
    into.appendChild(makeLane(a));
  }
  function subtree(path) {
    return agents.filter(function (a) { return a.path === path || a.path.indexOf(path + "/") === 0; });
  }
  function runGroup(r) {
    var figures = num(r.agents) + (r.agents === 1 ? " agent · " : " agents · ") + num(r.nulls) + " null · " +
      num(r.tokens) + " tokens" + (r.usd !== null && r.usd !== undefined ? " · " + dollars(r.usd) : "");
    var group = el("div", "wf-run", [el("div", "wf-head", [el("b", null, ["workflow " + r.name]), " ",
      el("span", "muted", [r.id]), " ", status(r.status), " ", figures,
      r.error ? el("div", "muted", [r.error]) : null])]);
    group.setAttribute("data-run", r.id);
    group.setAttribute("data-status", r.status);
    group.title = r.summary || "";
    r.phases.forEach(function (p) {
      var title = p.title === null ? "(no phase)" : p.title;
      var counts = num(p.agents.length) + (p.agents.length === 1 ? " agent" : " agents") +
        (p.not_completed ? " · " + num(p.not_completed) + " not completed" : "") +
        (p.unfinished ? " · " + num(p.unfinished) + " unfinished" : "") + " · " + num(p.tokens) + " tokens";
      var phase = el("div", "wf-phase", [el("div", "wf-phase-head", [el("b", null, [title]), " ", el("span", "muted", [counts])])]);
      phase.setAttribute("data-phase", title);
      phase.setAttribute("data-count", String(p.agents.length));
      phase.setAttribute("data-not-completed", String(p.not_completed));
      phase.setAttribute("data-phase-tokens", String(p.tokens));
      p.agents.forEach(function (path) { subtree(path).forEach(function (a) { place(a, phase); }); });
      group.appendChild(phase);
    });
    return group;
  }
  var shownRuns = {};
  agents.forEach(function (a) {
    var r = runOf[a.path];
    if (r && !placed[a.path] && !shownRuns[r.id]) {
      shownRuns[r.id] = true;
      timeline.appendChild(runGroup(r));
    }
    place(a, timeline);
  });
  (data.runs || []).forEach(function (r) { if (!shownRuns[r.id]) timeline.appendChild(runGroup(r)); });
  section.appendChild(timeline);
  app.appendChild(section);
  var detail = el("section", null, [el("div", "muted", ["Click a lane to see that agent's conversation."])]);
  detail.id = "detail";
  app.appendChild(detail);

  var toolNames = {};
  function renderBlock(block) {
    switch (block.t) {
      case "text": return el("div", "block text", [textBlock(block.text)]);
      case "thinking": return el("div", "block thinking", [el("details", null, [el("summary", null, ["thinking"]), el("pre", null, [block.text])])]);
      case "tool_use": {
        var node = el("div", "block tool-use", [el("span", "name", ["→ " + block.name]), " ", el("span", "muted", [block.id]), textBlock(block.input)]);
        if (block.diff) {
          var pre = el("pre", "diff", []);
          block.diff.split("\n").forEach(function (line) {
            if (!line) return;
            pre.appendChild(el("span", line[0] === "+" ? "add" : line[0] === "-" ? "del" : "ctx", [line + "\n"]));
          });
          node.appendChild(pre);
        }
        return node;
      }
      case "tool_result": return el("div", "block tool-result" + (block.error ? " error" : ""),
        [el("span", "muted", ["← result of " + (toolNames[block.id] ? toolNames[block.id] + " " : "") + block.id +
          (block.error ? " (error)" : "")]), textBlock(block.text)]);
      default: return el("div", "block other", [el("span", "muted", [block.kind || "block"]), textBlock(block.text || "")]);
    }
  }

  function show(path, itemIndex) {
    var a = byPath[path];
    if (!a) return;
    Object.keys(lanes).forEach(function (p) { lanes[p].classList.toggle("selected", p === path); });
    detail.textContent = "";
    detail.setAttribute("data-agent", path);
    var title = el("h2", "agent-path", [path, " ", status(a.status), " ", a.description]);
    detail.appendChild(title);
    var figures = el("table", "figures", []);
    function fig(name, value) { if (value !== null && value !== undefined && value !== "") figures.appendChild(el("tr", null, [el("th", null, [name]), el("td", null, [value])])); }
    fig("status", a.status);
    fig("agent type", a.agent_type);
    fig("parent", a.parent);
    fig("turns", num(a.turns));
    fig("tokens", tokensText(a.tokens));
    fig("cost", dollars(a.cost));
    fig("wall time", secs(a.end - a.start));
    fig("evidence", a.evidence ? el("pre", null, [a.evidence]) : null);
    fig("branch", a.branch);
    fig("worktree", a.worktree ? el("pre", null, [a.worktree]) : null);
    fig("error", a.error);
    fig("transcript", a.transcript);
    detail.appendChild(figures);
    toolNames = {};
    a.items.forEach(function (item) {
      (item.blocks || []).forEach(function (block) { if (block.t === "tool_use") toolNames[block.id] = block.name; });
    });
    var conversation = el("div", "conversation", []);
    a.items.forEach(function (item, index) {
      var node;
      if (item.k === "message") {
        node = el("div", "item " + item.role, [el("div", "role", [item.role + (item.ts ? " · +" + secs(item.ts - start) : "")])]);
        item.blocks.forEach(function (block) { node.appendChild(renderBlock(block)); });
      } else {
        node = el("div", "item event", [el("div", "role", [item.kind + (item.ts ? " · +" + secs(item.ts - start) : "")]), textBlock(item.text)]);
      }
      node.id = "item-" + index;
      conversation.appendChild(node);
    });
    if (!a.items.length) conversation.appendChild(el("div", "muted", ["No conversation was recorded for this agent."]));
    detail.appendChild(conversation);
    var target = itemIndex === undefined || itemIndex === null ? null : document.getElementById("item-" + Math.min(itemIndex, a.items.length - 1));
    if (target && target.scrollIntoView) target.scrollIntoView();
  }

  if (location.hash === "#selftest") {
    var results = [];
    agents.forEach(function (a) {
      lanes[a.path].click();
      results.push({ agent: a.path, shown: detail.getAttribute("data-agent"), items: detail.querySelectorAll(".item").length,
        text: detail.textContent.slice(0, 20000) });
    });
    var out = el("pre", null, [JSON.stringify(results)]);
    out.id = "selftest";
    document.body.appendChild(out);
  } else if (agents.length) {
    show(agents[0].path);
  }
}());
