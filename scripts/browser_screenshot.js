#!/usr/bin/env node
// Screenshot of a Cypher query's result in the real Neo4j Browser, driven by headless
// Chromium: open Browser with a preset connection, type the password into its connect form,
// turn off "Connect result nodes" (so the picture shows exactly the query's relationships),
// run the query from the editor (Ctrl+Enter), wait for the graph and save the result frame.
//
// It is a documentation tool, not part of kgqa: it needs Debian's chromium and playwright-core
// from npm, installed OUTSIDE the repository (docs/browser.md, "Screenshots"):
//
//   apt-get install -y chromium
//   mkdir -p /tmp/shot && (cd /tmp/shot && npm install playwright-core)
//   NEO4J_PASSWORD=... NODE_PATH=/tmp/shot/node_modules node scripts/browser_screenshot.js \
//     --cypher-file /tmp/evidence.cypher --out docs/img/browser-evidence.png
//
// Options: --cypher TEXT | --cypher-file PATH (required), --out PNG (required),
//   --browser URL (http://127.0.0.1:7474/browser/), --bolt HOST:PORT (127.0.0.1:7687),
//   --user NAME (neo4j), --width N --height N (1400x900), --chromium PATH (/usr/bin/chromium),
//   --settle MS (how long the force layout may move before the picture, 4000),
//   --page (save the whole page instead of the result frame).
// The password comes from NEO4J_PASSWORD only (never a command-line argument: `ps` shows those).
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');

function parseArgs(argv) {
  const args = {
    browser: 'http://127.0.0.1:7474/browser/',
    bolt: '127.0.0.1:7687',
    user: 'neo4j',
    width: 1400,
    height: 900,
    chromium: '/usr/bin/chromium',
    settle: 4000,
    page: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i].replace(/^--/, '');
    if (key === 'page') {
      args.page = true;
      continue;
    }
    if (!(i + 1 < argv.length)) throw new Error(`--${key} needs a value`);
    args[key.replace(/-([a-z])/g, (_, c) => c.toUpperCase())] = argv[++i];
  }
  if (args.cypherFile) args.cypher = fs.readFileSync(args.cypherFile, 'utf8');
  if (!args.cypher || !args.out) throw new Error('need --cypher or --cypher-file, and --out');
  if (!process.env.NEO4J_PASSWORD) throw new Error('set NEO4J_PASSWORD');
  return args;
}

async function runInEditor(page, text) {
  // The editor is Monaco: focus its input area, replace its content, run with Ctrl+Enter.
  const editor = page.locator('[data-testid=activeEditor] textarea').first();
  await editor.focus();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText(text);
  await page.keyboard.press('Control+Enter');
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const { chromium } = require('playwright-core');
  // A new, empty profile each time: no saved connection, settings or history from before.
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'kgqa-browser-shot-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: args.chromium,
    headless: true,
    viewport: { width: Number(args.width), height: Number(args.height) },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  try {
    const page = context.pages()[0] || (await context.newPage());
    const url = `${args.browser}?dbms=${encodeURIComponent(`neo4j://${args.user}@${args.bolt}`)}`;
    await page.goto(url, { waitUntil: 'networkidle', timeout: 60000 });
    await page.fill('[data-testid=password]', process.env.NEO4J_PASSWORD);
    await page.click('[data-testid=connect]');
    await page.getByText('You are connected', { exact: false }).first().waitFor({ timeout: 30000 });

    // "Connect result nodes" would add every other relationship between the shown nodes.
    await runInEditor(page, ':config autoComplete: false');
    await page.waitForTimeout(500);
    await runInEditor(page, ':clear');
    await page.waitForTimeout(500);

    await runInEditor(page, args.cypher.trim());
    const frame = page.locator('[data-testid=frame]').first();
    await frame.locator('svg g.node').first().waitFor({ timeout: 60000 });
    await page.waitForTimeout(Number(args.settle));
    const nodes = await frame.locator('svg g.node').count();
    const rels = await frame.locator('svg g.relationship').count();
    fs.mkdirSync(path.dirname(path.resolve(args.out)), { recursive: true });
    if (args.page) await page.screenshot({ path: args.out });
    else await frame.screenshot({ path: args.out });
    console.log(`${args.out}: ${nodes} nodes, ${rels} relationships drawn`);
  } finally {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(`browser_screenshot: ${err.message}`);
  process.exit(1);
});
