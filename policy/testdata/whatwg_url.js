// Reads a JSON array of URL strings on stdin and writes, for each, what
// Node's WHATWG URL parser (new URL) reads: {"ok":true,"host":…,"port":…,
// "protocol":…} or {"ok":false}. Used by TestParseHost_NodeDifferential.
let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (c) => { input += c; });
process.stdin.on('end', () => {
  const out = JSON.parse(input).map((s) => {
    try {
      const u = new URL(s);
      return { ok: true, host: u.hostname, port: u.port, protocol: u.protocol };
    } catch (e) {
      return { ok: false };
    }
  });
  process.stdout.write(JSON.stringify(out));
});
