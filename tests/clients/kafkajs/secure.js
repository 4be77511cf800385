'use strict'
// kafkajs 2.2.4 on cairnd's secured listeners; run by
// ../run_with_secure_cairnd.sh, whose CAIRN_TEST_* environment names the
// listeners, certificates, users and OAuth key.
//
//   node secure.js ssl|mtls|sasl_plaintext|sasl_ssl|oauthbearer
//
// Each mode produces records and reads them back through a consumer group
// with every credential the listener takes, then checks the refusals:
// a wrong password or mechanism, an untrusted server certificate, a
// missing, foreign or expired client certificate, an expired token or one
// signed with a key the broker does not know. A refused client must fail
// to connect with the matching error and get no data. The audit log must
// show the principal the broker authenticated.
//
// Exit status: 0 passed, 1 failed.

const crypto = require('crypto')
const fs = require('fs')
const { Kafka, logLevel } = require('kafkajs')

const RECORDS = 20
const env = process.env

function fail(msg) {
  throw new Error(msg)
}

function certFile(name) {
  return fs.readFileSync(`${env.CAIRN_TEST_CERTS}/${name}`, 'utf8')
}

// TLS options: trust ca (a file of the test certificates); client names a
// certificate/key pair (client, stranger, expired) or null for none.
function tls(ca = 'ca.pem', client = null) {
  const options = { ca: [certFile(ca)], rejectUnauthorized: true }
  if (client) {
    options.cert = certFile(`${client}.pem`)
    options.key = certFile(`${client}.key`)
  }
  return options
}

function makeKafka(broker, { ssl, sasl, retries = 5 } = {}) {
  return new Kafka({
    clientId: 'cairn-kafkajs-secure',
    brokers: [broker],
    ssl,
    sasl,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 10000,
    authenticationTimeout: 10000,
    retry: { retries, initialRetryTime: 100 },
  })
}

function recordFor(label, i) {
  return { key: `${label}-key-${i}`, value: `${label}-value-${i}`, headers: { seq: String(i) } }
}

// Creates a topic, produces RECORDS records to it, reads them back with a
// new consumer group and checks each arrived once and unchanged.
async function roundTrip(kafka, label) {
  const topic = `secure-${label}-${Date.now()}`
  const admin = kafka.admin()
  await admin.connect()
  if (!(await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true })))
    fail(`${label}: createTopics(${topic}) returned false`)
  const producer = kafka.producer()
  await producer.connect()
  const messages = []
  for (let i = 0; i < RECORDS; i++) messages.push(recordFor(label, i))
  await producer.send({ topic, messages, acks: -1 })
  await producer.disconnect()

  const consumer = kafka.consumer({ groupId: `${topic}-group` })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const seen = new Set()
  await new Promise((resolve, reject) => {
    const timedOut = () => reject(new Error(`${label}: ${seen.size} of ${RECORDS} records after 30 s`))
    const timer = setTimeout(timedOut, 30000)
    consumer
      .run({
        eachMessage: async ({ message }) => {
          const seq = Number(message.headers.seq.toString())
          const want = recordFor(label, seq)
          if (message.key.toString() !== want.key || message.value.toString() !== want.value)
            return reject(new Error(`${label}: record ${seq} differs from what was sent`))
          if (seen.has(seq)) return reject(new Error(`${label}: record ${seq} read twice`))
          seen.add(seq)
          if (seen.size === RECORDS) {
            clearTimeout(timer)
            resolve()
          }
        },
      })
      .catch(reject)
  })
  await consumer.disconnect()
  await admin.deleteTopics({ topics: [topic] })
  await admin.disconnect()
  console.log(`kafkajs ${label}: ${RECORDS} records produced and consumed`)
}

// Every message and name along an error's cause chain, for matching.
function describeError(e) {
  const parts = []
  for (let c = e; c && parts.length < 10; c = c.cause || c.originalError) parts.push(`${c.name}: ${c.message}`)
  return parts.join(' <- ')
}

// A consumer of a refused client must fail to connect with an error
// matching pattern, before it could fetch anything.
async function expectRefused(kafka, label, pattern) {
  const consumer = kafka.consumer({ groupId: `refused-${label}` })
  let received = 0
  try {
    await consumer.connect()
    await consumer.subscribe({ topic: 'anything', fromBeginning: true })
    await consumer.run({ eachMessage: async () => received++ })
  } catch (e) {
    const text = describeError(e)
    await consumer.disconnect().catch(() => {})
    if (!pattern.test(text)) fail(`${label}: refused with "${text}", expected ${pattern}`)
    if (received !== 0) fail(`${label}: a refused client got ${received} records`)
    console.log(`kafkajs ${label}: refused (${text.split(' <- ')[0]})`)
    return
  }
  await consumer.disconnect().catch(() => {})
  fail(`${label}: the client was let in`)
}

// Waits up to 20 s for the audit log's authentication event of principal
// (success or not) on listener, its error containing errorPart if given.
async function expectAudited(principal, listener, success, errorPart = null) {
  const deadline = Date.now() + 20000
  for (;;) {
    const lines = fs.existsSync(env.CAIRN_TEST_AUDIT_LOG) ? fs.readFileSync(env.CAIRN_TEST_AUDIT_LOG, 'utf8') : ''
    for (const line of lines.split('\n')) {
      if (!line) continue
      const ev = JSON.parse(line)
      if (ev.principal !== principal || ev.listener !== listener || ev.success !== success || !ev.mechanism) continue
      if (errorPart === null || (ev.error && ev.error.includes(errorPart))) {
        const detail = ev.error ? `, ${ev.error}` : ''
        console.log(`kafkajs: audit log has ${principal} on ${listener} (${ev.mechanism}, success ${success}${detail})`)
        return
      }
    }
    if (Date.now() > deadline)
      fail(`audit log has no authentication of ${principal} on ${listener} (success ${success}, ${errorPart})`)
    await new Promise(r => setTimeout(r, 100))
  }
}

// Waits up to 20 s for a line of the broker's log matching pattern.
async function expectBrokerLog(pattern) {
  const deadline = Date.now() + 20000
  for (;;) {
    const line = fs.readFileSync(env.CAIRN_TEST_BROKER_LOG, 'utf8').split('\n').find(l => pattern.test(l))
    if (line) {
      console.log(`kafkajs: broker log: ${line.replace(/^\S+ /, '')}`)
      return
    }
    if (Date.now() > deadline) fail(`the broker log has no line matching ${pattern}`)
    await new Promise(r => setTimeout(r, 100))
  }
}

const AUTH_ERROR = /KafkaJSSASLAuthenticationError/
// kafkajs sends its token and goes on without reading the broker's answer
// (the invalid_token challenge, as Kafka sends it); the broker then closes
// the connection at the next request, as Kafka does.
const TOKEN_REFUSED = /KafkaJSConnectionClosedError|KafkaJSSASLAuthenticationError/
// The broker answers SaslHandshake with UNSUPPORTED_SASL_MECHANISM.
const MECHANISM_ERROR = /KafkaJSProtocolError: The broker does not support the requested SASL mechanism/
const TLS_ERROR = /certificate|self.signed|unable to verify/i
// A refused client certificate ends the handshake or the connection.
const CLIENT_CERT_REFUSED = /certificate|alert|ECONNRESET|Connection (closed|error)|socket|EPIPE|timeout/i

// Each client gets its own sasl object: kafkajs stores the authenticator
// it builds (bound to the password) in the object it was given.
const SCRAM_AND_PLAIN = () => [
  { mechanism: 'scram-sha-256', username: 'scram256', password: 'scram256-secret' },
  { mechanism: 'scram-sha-512', username: 'scram512', password: 'scram512-secret' },
  { mechanism: 'plain', username: 'plainuser', password: 'plain-secret' },
]

// alice makes a topic under her prefix; User:ANONYMOUS (the SSL listener
// without client certificates) may not write to it.
async function expectOthersDenied(alice, anonymous) {
  const topic = `secure-mtls-acl-${Date.now()}`
  const admin = alice.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true })
  const producer = anonymous.producer()
  await producer.connect()
  try {
    await producer.send({ topic, messages: [{ value: 'not yours' }], acks: -1 })
    fail(`User:ANONYMOUS wrote to ${topic}`)
  } catch (e) {
    if (!/Not authorized to access topics/.test(describeError(e))) throw e
    console.log(`kafkajs: User:ANONYMOUS may not write to ${topic}: ${describeError(e).split(' <- ')[0]}`)
  } finally {
    await producer.disconnect()
  }
  const offsets = await admin.fetchTopicOffsets(topic)
  if (offsets[0].high !== '0') fail(`${topic} holds ${offsets[0].high} records after a denied write`)
  await admin.deleteTopics({ topics: [topic] })
  await admin.disconnect()
}

// A client whose connection is expected to be refused: no retries.
function refusedKafka(broker, options) {
  return makeKafka(broker, { ...options, retries: 0 })
}

async function saslListener(broker, listener, ssl) {
  for (const sasl of SCRAM_AND_PLAIN()) await roundTrip(makeKafka(broker, { ssl, sasl }), `${listener}-${sasl.mechanism}`)
  await expectAudited('User:scram256', listener, true)
  await expectAudited('User:plainuser', listener, true)
  for (const creds of SCRAM_AND_PLAIN()) {
    const sasl = { ...creds, password: 'wrong-password' }
    await expectRefused(refusedKafka(broker, { ssl, sasl }), `${listener}-${creds.mechanism}-wrong-password`, AUTH_ERROR)
  }
  await expectAudited('User:scram512', listener, false, 'invalid proof (wrong password)')
  // An unknown user is refused as a wrong password is.
  const sasl = { mechanism: 'scram-sha-256', username: 'nobody', password: 'scram256-secret' }
  await expectRefused(refusedKafka(broker, { ssl, sasl }), `${listener}-unknown-user`, AUTH_ERROR)
}

function base64url(data) {
  return Buffer.from(data).toString('base64').replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_')
}

// An ES256 JWT for sub, signed with the key in keyFile; claims override
// the defaults the broker expects.
function token(keyFile, sub, claims = {}) {
  const now = Math.floor(Date.now() / 1000)
  const header = { alg: 'ES256', typ: 'JWT', kid: env.CAIRN_TEST_OAUTH_KID }
  const payload = {
    sub,
    iss: env.CAIRN_TEST_OAUTH_ISSUER,
    aud: env.CAIRN_TEST_OAUTH_AUDIENCE,
    iat: now,
    exp: now + 600,
    scope: 'kafka',
    ...claims,
  }
  const signed = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(payload))}`
  // JWS wants the raw r || s, not DER (RFC 7518 3.4).
  const key = { key: fs.readFileSync(keyFile, 'utf8'), dsaEncoding: 'ieee-p1363' }
  const signature = crypto.sign('sha256', Buffer.from(signed), key)
  return `${signed}.${base64url(signature)}`
}

function oauth(tokenValue) {
  return { mechanism: 'oauthbearer', oauthBearerProvider: async () => ({ value: tokenValue }) }
}

async function main(mode) {
  const { CAIRN_TEST_SSL: sslBroker, CAIRN_TEST_MTLS: mtlsBroker } = env
  const { CAIRN_TEST_SASL_PLAINTEXT: saslPlaintextBroker, CAIRN_TEST_SASL_SSL: saslSslBroker } = env
  const { CAIRN_TEST_OAUTH_KEY: oauthKey, CAIRN_TEST_OAUTH_UNKNOWN_KEY: unknownKey } = env
  switch (mode) {
    case 'ssl':
      await roundTrip(makeKafka(sslBroker, { ssl: tls() }), 'ssl')
      await expectRefused(refusedKafka(sslBroker, { ssl: tls('other-ca.pem') }), 'ssl-untrusted-server', TLS_ERROR)
      // A listener whose certificate expired.
      await expectRefused(refusedKafka(env.CAIRN_TEST_EXPIRED_SSL, { ssl: tls() }), 'ssl-expired-server', /certificate has expired/)
      return
    case 'mtls': {
      // secure-mtls* is User:alice's alone (ACLs): the round trip only
      // works when the ACLs see the principal auth-mtls maps.
      await roundTrip(makeKafka(mtlsBroker, { ssl: tls('ca.pem', 'client') }), 'mtls')
      await expectAudited('User:alice', 'MTLS', true)
      await expectOthersDenied(makeKafka(mtlsBroker, { ssl: tls('ca.pem', 'client') }), refusedKafka(sslBroker, { ssl: tls() }))
      const refusals = [
        [null, 'peer did not return a certificate'],
        ['stranger', 'unable to get local issuer certificate'],
        ['expired', 'certificate has expired'],
      ]
      for (const [client, reason] of refusals) {
        const kafka = refusedKafka(mtlsBroker, { ssl: tls('ca.pem', client) })
        await expectRefused(kafka, `mtls-${client || 'no'}-client-certificate`, CLIENT_CERT_REFUSED)
        await expectAudited('User:ANONYMOUS', 'MTLS', false, reason)
      }
      const untrusting = refusedKafka(mtlsBroker, { ssl: tls('other-ca.pem', 'client') })
      await expectRefused(untrusting, 'mtls-untrusted-server', TLS_ERROR)
      return
    }
    case 'sasl_plaintext': {
      await saslListener(saslPlaintextBroker, 'SASL_PLAINTEXT')
      // OAUTHBEARER is enabled on SASL_SSL only.
      const kafka = refusedKafka(saslPlaintextBroker, { sasl: oauth(token(oauthKey, 'oauth-client')) })
      await expectRefused(kafka, 'SASL_PLAINTEXT-wrong-mechanism', MECHANISM_ERROR)
      return
    }
    case 'sasl_ssl': {
      await saslListener(saslSslBroker, 'SASL_SSL', tls())
      const sasl = SCRAM_AND_PLAIN()[0]
      const untrusting = refusedKafka(saslSslBroker, { ssl: tls('other-ca.pem'), sasl })
      await expectRefused(untrusting, 'SASL_SSL-untrusted-server', TLS_ERROR)
      const aws = { mechanism: 'aws', authorizationIdentity: 'x', accessKeyId: 'x', secretAccessKey: 'x' }
      await expectRefused(refusedKafka(saslSslBroker, { ssl: tls(), sasl: aws }), 'SASL_SSL-wrong-mechanism', MECHANISM_ERROR)
      return
    }
    case 'oauthbearer': {
      const sasl = oauth(token(oauthKey, 'oauth-client'))
      await roundTrip(makeKafka(saslSslBroker, { ssl: tls(), sasl }), 'oauthbearer')
      await expectAudited('User:oauth-client', 'SASL_SSL', true)
      const now = Math.floor(Date.now() / 1000)
      const refusals = [
        ['expired', token(oauthKey, 'oauth-client', { iat: now - 7200, exp: now - 3600 }), /token refused: the token expired/],
        ['unknown-key', token(unknownKey, 'oauth-client'), /token refused: the ES256 signature does not verify/],
        ['wrong-audience', token(oauthKey, 'oauth-client', { aud: 'someone-else' }), /token refused: the token's audience/],
      ]
      for (const [what, value, reason] of refusals) {
        const kafka = refusedKafka(saslSslBroker, { ssl: tls(), sasl: oauth(value) })
        await expectRefused(kafka, `oauthbearer-${what}-token`, TOKEN_REFUSED)
        await expectBrokerLog(reason)
      }
      return
    }
    default:
      fail(`unknown mode ${mode}`)
  }
}

const deadline = setTimeout(() => {
  console.error('kafkajs secure: timed out after 100 s')
  process.exit(1)
}, 100000)

main(process.argv[2]).then(
  () => {
    clearTimeout(deadline)
    process.exit(0)
  },
  err => {
    console.error(`kafkajs secure: FAILED: ${err.stack || err}`)
    process.exit(1)
  }
)
