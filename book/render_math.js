// Typesets math for `chalkboard build` with the vendored KaTeX (book/assets/katex).
// One process per build. Each input line is a JSON array of [tex, display] pairs; each output
// line is a JSON object {html: [...]} in the same order, or {error: "..."} naming the formula
// KaTeX rejected.
"use strict";
const path = require("path");
const readline = require("readline");
const katex = require(path.join(__dirname, "assets", "katex", "katex.min.js"));

const lines = readline.createInterface({ input: process.stdin, terminal: false });
lines.on("line", (line) => {
  let reply;
  try {
    const html = JSON.parse(line).map(([tex, display]) => {
      try {
        return katex.renderToString(tex, { displayMode: display, output: "html", throwOnError: true });
      } catch (err) {
        throw new Error(`${err.message} in: ${tex.slice(0, 120)}`);
      }
    });
    reply = { html };
  } catch (err) {
    reply = { error: String(err.message || err) };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
});
