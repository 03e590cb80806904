// kgqa's page: asks POST /v1/ask with Accept: text/event-stream, shows each stage as it ends,
// then the answer entities with their support triples, the reasoning, the evidence graph
// (cytoscape.js, shipped in /static/vendor) and the Cypher for Neo4j Browser. Text from the
// server is only ever set as textContent.
"use strict";

const MAX_NODES = 300;
const NEIGHBOURS = 20;
const $ = (id) => document.getElementById(id);
let cy = null;
let info = { browser_url: null };
let busy = false;

function headers(extra) {
  const h = Object.assign({}, extra || {});
  const token = $("token").value.trim();
  if (token) h.Authorization = "Bearer " + token;
  return h;
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function stage(name, detail) {
  const li = el("li");
  li.appendChild(el("span", name, "stage"));
  if (detail) li.appendChild(document.createTextNode(": " + detail));
  $("stages").appendChild(li);
}

function showError(body) {
  const err = (body && body.error) || { message: String(body) };
  const p = $("error");
  p.textContent = (err.type ? err.type + ": " : "") + err.message;
  p.hidden = false;
}

function describe(event, d) {
  switch (event) {
    case "queued": return d.ahead ? d.ahead + " ahead in the queue" : "started";
    case "entities": return (d.entities || []).join(", ") + (d.linked ? " (linked from the words)" : "");
    case "decomposition": return (d.sub_questions || []).map((q, i) => (i + 1) + ". " + q).join("  ");
    case "candidates": return d.count + " candidate triples within " + d.hops + " hops" + (d.truncated ? " (truncated)" : "");
    case "reformulation": return d.reformulated;
    case "sub_answer": return d.answer + " (" + (d.triples || []).length + " triples read)";
    case "hop": return d.index + ". " + (d.step || "no step") + (d.start ? " from " + d.start : "")
      + (d.skipped ? " (skipped)" : " reaches " + d.entity_count + (d.entity_count === 1 ? " entity" : " entities"));
    case "synthesis": return (d.answer_text || "").split("\n")[0];
    case "check": return (d.mistakes || []).length + " mistakes";
    case "costs": return d.total_seconds + " s, " + d.prompt_tokens + " prompt and " + d.completion_tokens + " output tokens";
    default: return "";
  }
}

// Server-sent events from a fetch body: "event: x\ndata: {...}\n\n" blocks.
async function readEvents(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let name = null;
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (name) onEvent(name, data.length ? JSON.parse(data.join("\n")) : {});
    }
  }
}

function reset() {
  $("stages").replaceChildren();
  $("error").hidden = true;
  $("entities").replaceChildren();
  $("reasoning").textContent = "";
  $("cypher").textContent = "";
  $("answer-line").textContent = "…";
  $("cache-note").hidden = true;
  $("copy").disabled = true;
  $("open-browser").hidden = true;
  $("nodes").replaceChildren();
  if (cy) cy.elements().remove();
}

function renderAnswer(doc, evidence) {
  $("answer-line").textContent = doc.answer || "(no answer)";
  if (doc.cache && doc.cache.hit) {
    $("cache-note").textContent = "From the answer cache (stored " + doc.cache.stored_at + ").";
    $("cache-note").hidden = false;
  }
  const byId = new Map((evidence ? evidence.triples : []).map((t) => [t.id, t]));
  const list = $("entities");
  (evidence ? evidence.answers : []).forEach((a) => {
    const li = el("li");
    li.appendChild(el("strong", a.name));
    li.appendChild(document.createTextNode(a.node_id ? " (node " + a.node_id + ")" : " (not in the KB)"));
    const support = el("ul", null, "support");
    if (!a.support.length) support.appendChild(el("li", "no supporting triple: stated without evidence"));
    a.support.slice(0, 5).forEach((id) => {
      const t = byId.get(id);
      support.appendChild(el("li", t ? t.text : "#" + id));
    });
    if (a.support.length > 5) support.appendChild(el("li", "… " + (a.support.length - 5) + " more"));
    li.appendChild(support);
    list.appendChild(li);
  });
  if (evidence && evidence.more_answers) list.appendChild(el("li", "… and " + evidence.more_answers + " more"));
  $("reasoning").textContent = doc.reasoning || "";
  $("cypher").textContent = doc.browser_cypher || "";
  $("copy").disabled = !doc.browser_cypher;
  if (info.browser_url && doc.browser_cypher) {
    const a = $("open-browser");
    a.href = info.browser_url + "?cmd=edit&arg=" + encodeURIComponent(doc.browser_cypher);
    a.hidden = false;
  }
}

// -- the evidence graph -------------------------------------------------------------------
function ensureGraph() {
  if (cy || typeof cytoscape === "undefined") return cy;
  cy = cytoscape({
    container: $("graph"),
    maxZoom: 1.6,
    minZoom: 0.2,
    style: [
      { selector: "node", style: { label: "data(label)", "font-size": 11, "background-color": "#6b7785",
        "text-wrap": "wrap", "text-max-width": 120, "text-valign": "bottom", "text-margin-y": 4, width: 18, height: 18 } },
      { selector: "node.topic", style: { "background-color": "#b35c00", shape: "square", width: 24, height: 24 } },
      { selector: "node.answer", style: { "background-color": "#1e7d32", width: 24, height: 24 } },
      { selector: "node:selected", style: { "border-width": 3, "border-color": "#ffbf47" } },
      { selector: "edge", style: { label: "data(label)", "font-size": 9, "curve-style": "bezier",
        "target-arrow-shape": "triangle", width: 1.2, "line-color": "#aab3bc", "target-arrow-color": "#aab3bc",
        "text-rotation": "autorotate", color: "#5b6672", "text-background-color": "#fff",
        "text-background-opacity": 0.85, "text-background-padding": 1 } },
      { selector: "edge.path", style: { width: 3.5, "line-color": "#1f5fbf", "target-arrow-color": "#1f5fbf" } },
      { selector: "edge.expanded", style: { "line-style": "dashed" } },
    ],
  });
  cy.on("tap", "node", (e) => expand(e.target.id()));
  // A narrower window (a phone turned, a pane resized): the canvas follows its box.
  if (typeof ResizeObserver !== "undefined") {
    new ResizeObserver(() => { cy.resize(); cy.fit(undefined, 20); }).observe($("graph"));
  }
  return cy;
}

function addTriples(triples, cls) {
  const g = ensureGraph();
  const added = [];
  triples.forEach((t) => {
    for (const name of [t.subject, t.object]) {
      if (!g.getElementById(name).length) {
        if (g.nodes().length >= MAX_NODES) return;
        added.push(g.add({ group: "nodes", data: { id: name, label: name } }));
      }
    }
    const id = "t" + t.id;
    if (!g.getElementById(id).length) {
      g.add({ group: "edges", data: { id, source: t.subject, target: t.object,
        label: t.relation.replace(/_/g, " ") }, classes: cls || "" });
    }
  });
  return added;
}

// While the question runs: the triples each hop moved along or each sub-answer read, as
// they come (replaced by the support graph when the answer is there).
function drawLive(triples) {
  const g = ensureGraph();
  if (!g) return;
  addTriples(triples.map((t) => ({ id: t.key, subject: t.subject, relation: t.relation, object: t.object })), "live");
  g.layout({ name: "cose", animate: false }).run();
  g.fit(undefined, 20);
}

function drawEvidence(evidence) {
  const g = ensureGraph();
  if (!g || !evidence) return;
  g.elements().remove();
  addTriples(evidence.triples);
  evidence.topic.forEach((name) => g.getElementById(name).addClass("topic"));
  evidence.answers.forEach((a) => {
    g.getElementById(a.name).addClass("answer");
    a.support.forEach((id) => g.getElementById("t" + id).addClass("path"));
  });
  // Levels from the topic entities: the path reads top to bottom, topic to answer.
  const roots = g.nodes(".topic");
  g.layout(roots.length ? { name: "breadthfirst", roots, directed: false, spacingFactor: 1.2, animate: false }
    : { name: "cose", animate: false }).run();
  g.fit(undefined, 20);
  listNodes();
}

function listNodes() {
  const ul = $("nodes");
  ul.replaceChildren();
  cy.nodes().forEach((n) => {
    const li = el("li");
    const b = el("button", n.id(), "node" + (n.hasClass("topic") ? " topic" : n.hasClass("answer") ? " answer" : ""));
    b.type = "button";
    b.setAttribute("aria-label", "Show the neighbours of " + n.id());
    b.addEventListener("click", () => expand(n.id()));
    li.appendChild(b);
    ul.appendChild(li);
  });
}

async function expand(name) {
  const g = ensureGraph();
  const r = await fetch("/v1/neighbours?" + new URLSearchParams({ entity: name, limit: NEIGHBOURS }), { headers: headers() });
  const body = await r.json();
  if (!r.ok) { showError(body); return; }
  const added = addTriples(body.triples, "expanded");
  stage("neighbours", name + ": " + body.triples.length + " triples" + (body.more ? " (capped)" : ""));
  const node = g.getElementById(name);
  g.nodes().unselect();
  node.select();
  if (added.length) {
    g.layout({ name: "concentric", animate: false, concentric: (n) => (n.id() === name ? 2 : 1), levelWidth: () => 1,
      boundingBox: undefined }).run();
    g.fit(undefined, 20);
  }
  listNodes();
}

// -- asking ----------------------------------------------------------------------------------
async function ask(event) {
  event.preventDefault();
  if (busy) return;
  const question = $("question").value.trim();
  if (!question) return;
  busy = true;
  $("submit").disabled = true;
  reset();
  let evidence = null;
  try {
    const r = await fetch("/v1/ask", {
      method: "POST",
      headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }),
      body: JSON.stringify({ question, mode: $("mode").value }),
    });
    if (!r.ok || !(r.headers.get("content-type") || "").startsWith("text/event-stream")) {
      showError(await r.json().catch(() => "HTTP " + r.status));
      $("answer-line").textContent = "(no answer)";
      return;
    }
    await readEvents(r, (name, d) => {
      if (name === "evidence") { evidence = d; return; }
      if (name === "answer") { renderAnswer(d, evidence); drawEvidence(evidence); stage("answer", d.answer); return; }
      if (name === "error") { showError(d); $("answer-line").textContent = "(no answer)"; return; }
      if (name === "done") { stage("done"); return; }
      if ((name === "hop" || name === "sub_answer") && d.triples) drawLive(d.triples);
      stage(name.replace("_", " "), describe(name, d));
    });
  } catch (e) {
    showError(String(e));
  } finally {
    busy = false;
    $("submit").disabled = false;
    $("answer").focus();
  }
}

async function copyCypher() {
  const text = $("cypher").textContent;
  try {
    await navigator.clipboard.writeText(text);
    stage("copied", "the Cypher is on the clipboard");
  } catch (e) {
    const range = document.createRange();
    range.selectNodeContents($("cypher"));
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    stage("selected", "the Cypher is selected: copy it with Ctrl+C");
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("ask").addEventListener("submit", ask);
  $("question").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); $("ask").requestSubmit(); }
  });
  $("copy").addEventListener("click", copyCypher);
  try { $("token").value = sessionStorage.getItem("kgqa-token") || ""; } catch (e) { /* storage off */ }
  $("token").addEventListener("change", () => {
    try { sessionStorage.setItem("kgqa-token", $("token").value); } catch (e) { /* storage off */ }
  });
  fetch("/v1/info", { headers: headers() }).then((r) => (r.ok ? r.json() : null)).then((d) => { if (d) info = d; })
    .catch(() => {});
});
