#!/usr/bin/env bash
# The page's JavaScript from npm, copied into ../static/vendor: the files kgqa serve ships
# (no CDN at run time). Run it after changing package.json; commit what it writes.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --silent
out=../static/vendor
mkdir -p "$out"
cp node_modules/cytoscape/dist/cytoscape.min.js "$out/cytoscape.min.js"
cp node_modules/cytoscape/LICENSE "$out/cytoscape.LICENSE"
version=$(node -p 'require("./node_modules/cytoscape/package.json").version')
sha=$(sha256sum "$out/cytoscape.min.js" | cut -d' ' -f1)
printf '{\n  "cytoscape": {"version": "%s", "file": "cytoscape.min.js", "sha256": "%s"}\n}\n' \
  "$version" "$sha" > "$out/VENDOR.json"
echo "build.sh: cytoscape $version -> $out"
