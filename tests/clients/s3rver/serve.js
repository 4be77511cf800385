#!/usr/bin/env node
// s3rver on loopback for the storage-s3 tests, with AWS Signature Version 4
// checked on every request: s3rver 3.7.1 itself checks only that the access
// key exists ("V4 signatures have incomplete support"), so a wrong secret
// would pass. This check is written independently of the plugin's C signer.
// Every PUT and POST must also carry Content-MD5 and a signed
// x-amz-content-sha256, and both must match the body (s3rver checks neither).
//
// usage: node serve.js <data dir> <port (0: any)> <bucket> <access key id> <secret>
// Prints "listening <port>" once it accepts connections; stops on SIGTERM.
'use strict';

const crypto = require('crypto');
const { PassThrough, Transform } = require('stream');
const S3rver = require('s3rver');
const AWSAccount = require('s3rver/lib/models/account');

const [directory, port, bucket, accessKeyId, secret] = process.argv.slice(2);
if (!secret) {
  console.error('usage: serve.js <dir> <port> <bucket> <access key id> <secret>');
  process.exit(2);
}
AWSAccount.DUMMY_ACCOUNT.createKeyPair(accessKeyId, secret);

const rfc3986 = s => encodeURIComponent(s).replace(/[!'()*]/g, c => '%' + c.charCodeAt(0).toString(16).toUpperCase());
// A request without x-amz-content-sha256 carries no body (S3 wants the header on every request).
const EMPTY_SHA256 = crypto.createHash('sha256').update('').digest('hex');
const hmac = (key, data) => crypto.createHmac('sha256', key).update(data).digest();

function canonicalQuery(raw) {
  if (!raw) return '';
  return raw
    .split('&')
    .filter(Boolean)
    .map(pair => {
      const eq = pair.indexOf('=');
      const k = eq < 0 ? pair : pair.slice(0, eq);
      const v = eq < 0 ? '' : pair.slice(eq + 1);
      return [rfc3986(decodeURIComponent(k)), rfc3986(decodeURIComponent(v))];
    })
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
}

// Returns null when the request is correctly signed, else why not.
function verify(req) {
  const auth = req.headers['authorization'] || '';
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(auth);
  if (!m) return 'not a SigV4 Authorization header';
  const [, keyId, date, region, signedHeaders, signature] = m;
  const key = AWSAccount.DUMMY_ACCOUNT.accessKeys.get(keyId);
  if (key === undefined) return 'unknown access key';
  const amzDate = req.headers['x-amz-date'] || '';
  if (!amzDate.startsWith(date)) return 'x-amz-date does not match the credential scope';
  const names = signedHeaders.split(';');
  if (!names.includes('host') || !names.includes('x-amz-date')) return 'host and x-amz-date must be signed';
  const [rawPath, rawQuery] = req.url.split('?', 2);
  const headerLines = names.map(n => `${n}:${String(req.headers[n] ?? '').trim().replace(/\s+/g, ' ')}\n`).join('');
  const canonical = [req.method, rawPath, canonicalQuery(rawQuery), headerLines, signedHeaders,
    req.headers['x-amz-content-sha256'] || EMPTY_SHA256].join('\n');
  const scope = `${date}/${region}/s3/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, crypto.createHash('sha256').update(canonical).digest('hex')].join('\n');
  const signingKey = hmac(hmac(hmac(hmac('AWS4' + key, date), region), 's3'), 'aws4_request');
  const expected = hmac(signingKey, toSign).toString('hex');
  if (expected !== signature) return 'signature mismatch';
  if (req.headers['x-amz-security-token'] !== undefined) {
    if (!names.includes('x-amz-security-token')) return 'x-amz-security-token must be signed';
    stats.signedSessionTokens++;
  }
  return null;
}

const server = new S3rver({
  address: '127.0.0.1',
  port: Number(port),
  directory,
  silent: true,
  serviceEndpoint: 'localhost',
  configureBuckets: [{ name: bucket }],
});
function s3Error(ctx, status, code, message) {
  ctx.status = status;
  ctx.type = 'application/xml';
  ctx.body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message></Error>`;
}

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return Buffer.concat(chunks);
}

// Returns null when both checksums are present and match the body.
function checkBody(headers, body) {
  const md5 = headers['content-md5'];
  const sha = headers['x-amz-content-sha256'];
  if (!md5 || !sha || sha === 'UNSIGNED-PAYLOAD') return 'Content-MD5 and x-amz-content-sha256 are required on uploads';
  if (crypto.createHash('md5').update(body).digest('base64') !== md5) return 'Content-MD5 does not match the body';
  if (crypto.createHash('sha256').update(body).digest('hex') !== sha) return 'x-amz-content-sha256 does not match the body';
  return null;
}

// Test controls, unsigned, on loopback only: counts of the connections
// accepted and of the multipart calls seen, and a fault to inject once into the UploadPart of a given part number.
const stats = { connections: 0, createUploads: 0, uploadParts: 0, completes: 0, aborts: 0, injected: 0, cuts: 0,
  signedSessionTokens: 0 };
let fault = null;
// The next object GET sends only this many bytes, then drops the connection
// (mode "drop") or ends the body early but cleanly (mode "short").
let cut = null;

function control(ctx) {
  if (ctx.path === '/__control/stats') {
    ctx.type = 'application/json';
    ctx.body = JSON.stringify(stats);
  } else if (ctx.path === '/__control/cut-get') {
    cut = Number(ctx.query.after) > 0 ? { after: Number(ctx.query.after), mode: String(ctx.query.mode) } : null;
    ctx.body = 'ok';
  } else if (ctx.path === '/__control/fail-part') {
    fault = { part: String(ctx.query.part), status: Number(ctx.query.status) };
    ctx.body = 'ok';
  } else {
    return false;
  }
  return true;
}

// Counts multipart calls; true when the injected fault answered this one.
function countAndInject(ctx) {
  const q = ctx.query;
  if (ctx.method === 'POST' && 'uploads' in q) stats.createUploads++;
  if (ctx.method === 'POST' && 'uploadId' in q) stats.completes++;
  if (ctx.method === 'DELETE' && 'uploadId' in q) stats.aborts++;
  if (ctx.method === 'PUT' && 'partNumber' in q) {
    stats.uploadParts++;
    if (fault && fault.part === String(q.partNumber)) {
      const { status } = fault;
      fault = null;
      stats.injected++;
      s3Error(ctx, status, status >= 500 ? 'InternalError' : 'InvalidPart', 'injected by the test');
      return true;
    }
  }
  return false;
}

// Sends the first `limit` bytes of the body, then either drops the
// connection (a transfer broken in the middle) or ends the body there.
function cutBody(ctx, limit, drop) {
  stats.cuts++;
  let sent = 0;
  const cutter = new Transform({
    transform(chunk, encoding, done) {
      if (sent >= limit) return drop ? undefined : done(); // drop: hold the stream until the socket goes
      const part = chunk.subarray(0, Math.min(chunk.length, limit - sent));
      sent += part.length;
      this.push(part);
      if (sent >= limit && drop) setTimeout(() => ctx.req.socket.destroy(), 50);
      done();
    },
  });
  ctx.body = ctx.body.pipe(cutter);
}

server.middleware.unshift(async (ctx, next) => {
  if (control(ctx)) return;
  const why = verify(ctx.req);
  if (why) {
    s3Error(ctx, 403, 'SignatureDoesNotMatch',
      `The request signature we calculated does not match the signature you provided (${why}).`);
    return;
  }
  if (ctx.method === 'PUT' || ctx.method === 'POST') {
    const original = ctx.req;
    const body = await readBody(original);
    const bad = checkBody(original.headers, body);
    if (bad) {
      s3Error(ctx, 400, 'BadDigest', bad);
      return;
    }
    // s3rver reads the body from ctx.req: hand it a replay of the bytes.
    const replay = new PassThrough();
    Object.assign(replay, { headers: original.headers, method: original.method, url: original.url,
      httpVersion: original.httpVersion, socket: original.socket, connection: original.socket });
    replay.end(body);
    ctx.req = ctx.request.req = replay;
  }
  if (countAndInject(ctx)) return;
  await next();
  if (cut && ctx.method === 'GET' && ctx.body && typeof ctx.body.pipe === 'function') {
    cutBody(ctx, cut.after, cut.mode === 'drop');
    cut = null;
  }
});
server.run().then(
  address => {
    server.httpServer.on('connection', () => stats.connections++);
    console.log(`listening ${address.port}`);
  },
  err => {
    console.error(`s3rver failed to start: ${err.message}`);
    process.exit(1);
  },
);
process.on('SIGTERM', () => server.close().then(() => process.exit(0)));
