// @platformatic/kafka 2.12.1 against a running broker. Starts nothing itself.
//
//   node compat.mjs <bootstrap host:port> [basic|group]
//
// basic: admin (createTopics, listTopics, metadata, describe/alter/
//   incrementalAlter configs, listOffsets), two producers (one idempotent)
//   sending 10,000 keyed messages with headers to 3 partitions in every
//   codec the client has (none, gzip, snappy, lz4, zstd), acks=all, and a
//   read-back through the consumer's group-less fetch() comparing every
//   record and batch with what was sent; then a transactional producer
//   (commit, abort, commit) read back with read_committed, and offsets by
//   timestamp inside compressed batches.
// group: two consumers of one group share 4 partitions, commit, one leaves,
//   the other takes over from the committed offsets.
//
// Both print the API versions the client sent (seen on the client's own
// diagnostics channel) so that docs/compatibility.md can list them.
//
// Exit status: 0 passed, 1 failed.

import diagnostics from 'node:diagnostics_channel'
import {
  Admin,
  Consumer,
  Producer,
  ProduceAcks,
  ConfigResourceTypes,
  FetchIsolationLevels,
  IncrementalAlterConfigOperationTypes,
  ListOffsetTimestamps,
  stringSerializers,
} from '@platformatic/kafka'

const TOTAL = 10000
const SEND_SIZE = 500
const CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd']
// The record batch attribute bits (0-2) for each codec.
const CODEC_BITS = { none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4 }
const MODE_DEADLINE_MS = 40000

function fail(msg) {
  throw new Error(msg)
}

// Every (api, version) the client sends, from its connection tracing channel.
const versionsSeen = new Map()
// API names by key, from the broker's ApiVersions answer.
const apiNames = new Map()
diagnostics.tracingChannel('plt:kafka:connections:api').subscribe({
  start(ctx) {
    if (ctx.operation !== 'send') return
    const versions = versionsSeen.get(ctx.apiKey) || new Set()
    versions.add(ctx.apiVersion)
    versionsSeen.set(ctx.apiKey, versions)
  },
  end() {},
  asyncStart() {},
  asyncEnd() {},
  error() {},
})

function versionsReport() {
  return [...versionsSeen.keys()]
    .sort((a, b) => a - b)
    .map(k => `${apiNames.get(k) || 'api'}(${k}) v${[...versionsSeen.get(k)].sort((a, b) => a - b).join('/')}`)
    .join(', ')
}

// Every version sent must be inside the range the broker advertised.
async function checkVersionsAdvertised(client) {
  const apis = await client.listApis()
  for (const a of apis) apiNames.set(a.apiKey, a.name)
  for (const [key, versions] of versionsSeen) {
    const api = apis.find(a => a.apiKey === key)
    for (const v of versions) {
      if (!api) fail(`client sent API ${key} v${v}, which the broker does not advertise`)
      if (v < api.minVersion || v > api.maxVersion) {
        fail(`client sent ${api.name} v${v}, outside the advertised ${api.minVersion}-${api.maxVersion}`)
      }
    }
  }
}

const baseOptions = bootstrap => ({
  clientId: 'cairn-platformatic-compat',
  bootstrapBrokers: [bootstrap],
  retries: 5,
  retryDelay: 200,
  timeout: 10000,
})

// Sends are aligned on SEND_SIZE and take turns through the codecs.
function messageFor(i) {
  const codec = CODECS[Math.floor(i / SEND_SIZE) % CODECS.length]
  return {
    key: `key-${i}`,
    value: `value-${i}-${'x'.repeat(i % 97)}`,
    headers: { seq: String(i), codec },
    codec,
  }
}

// Creates the topic with `configs` ({name: value}) and checks it the ways
// the admin client can see it.
async function createTopic(admin, topic, partitions, bootstrap, configs = {}) {
  const created = await admin.createTopics({
    topics: [topic],
    partitions,
    replicas: 1,
    configs: Object.entries(configs).map(([name, value]) => ({ name, value })),
  })
  if (created.length !== 1 || created[0].name !== topic) fail(`createTopics returned ${JSON.stringify(created)}`)
  const { id, configuration } = created[0]
  if (!/^[0-9a-f-]{36}$/.test(id) || /^[0-]+$/.test(id)) fail(`createTopics: topic id ${id}`)
  if (created[0].partitions !== partitions || created[0].replicas !== 1) {
    fail(`createTopics: ${created[0].partitions} partitions, ${created[0].replicas} replicas`)
  }
  // CreateTopics v5+ answers with the topic's effective configuration.
  const want = { 'cleanup.policy': 'delete', 'segment.bytes': '1073741824', ...configs }
  for (const [name, value] of Object.entries(want)) {
    if (configuration[name] !== value) fail(`createTopics: configuration ${name} is ${configuration[name]}, expected ${value}`)
  }

  const topics = await admin.listTopics()
  if (!topics.includes(topic)) fail(`listTopics does not include ${topic}: ${topics}`)
  const internal = await admin.listTopics({ includeInternals: true })
  if (!internal.includes(topic)) fail(`listTopics({includeInternals}) does not include ${topic}`)

  const md = await admin.metadata({ topics: [topic], forceUpdate: true })
  if (md.brokers.size !== 1) fail(`metadata lists ${md.brokers.size} brokers`)
  const [nodeId, broker] = [...md.brokers][0]
  if (`${broker.host}:${broker.port}` !== bootstrap) fail(`metadata: broker ${nodeId} at ${broker.host}:${broker.port}`)
  if (md.controllerId !== nodeId) fail(`metadata: controller ${md.controllerId}, broker ${nodeId}`)
  const t = md.topics.get(topic)
  if (!t) fail(`metadata has no ${topic}`)
  if (t.id !== id) fail(`metadata: topic id ${t.id}, createTopics said ${id}`)
  if (t.partitionsCount !== partitions || t.partitions.length !== partitions) {
    fail(`metadata: ${t.partitionsCount} partitions, expected ${partitions}`)
  }
  t.partitions.forEach((p, i) => {
    const where = `metadata ${topic}-${i}`
    if (p.leader !== nodeId) fail(`${where}: leader ${p.leader}`)
    if (p.leaderEpoch < 0) fail(`${where}: leader epoch ${p.leaderEpoch}`)
    if (p.replicas.length !== 1 || p.replicas[0] !== nodeId) fail(`${where}: replicas ${p.replicas}`)
    if (p.isr.length !== 1 || p.isr[0] !== nodeId) fail(`${where}: isr ${p.isr}`)
    if (p.offlineReplicas.length !== 0) fail(`${where}: offline replicas ${p.offlineReplicas}`)
  })
  return { id, nodeId }
}

async function topicConfig(admin, topic, names) {
  const res = await admin.describeConfigs({
    resources: [{ resourceType: ConfigResourceTypes.TOPIC, resourceName: topic, configurationKeys: names }],
  })
  if (res.length !== 1 || res[0].resourceName !== topic) fail(`describeConfigs returned ${res.length} resources`)
  return new Map(res[0].configs.map(c => [c.name, c.value]))
}

async function checkConfigs(admin, topic) {
  const all = await topicConfig(admin, topic, null)
  if (all.get('cleanup.policy') !== 'delete') fail(`describeConfigs: cleanup.policy is ${all.get('cleanup.policy')}`)
  if (all.get('retention.ms') !== '86400000') fail(`describeConfigs: retention.ms set at creation reads ${all.get('retention.ms')}`)
  if (!all.has('retention.ms') || !all.has('segment.bytes')) fail('describeConfigs: retention.ms or segment.bytes missing')

  await admin.alterConfigs({
    resources: [
      {
        resourceType: ConfigResourceTypes.TOPIC,
        resourceName: topic,
        configs: [{ name: 'retention.ms', value: '3600000' }],
      },
    ],
  })
  let cfg = await topicConfig(admin, topic, ['retention.ms'])
  if (cfg.get('retention.ms') !== '3600000') fail(`alterConfigs: retention.ms reads ${cfg.get('retention.ms')}`)
  if (cfg.size !== 1) fail(`describeConfigs for one key answered ${cfg.size}`)

  // Incremental SET keeps the other dynamic keys, unlike AlterConfigs.
  await admin.incrementalAlterConfigs({
    resources: [
      {
        resourceType: ConfigResourceTypes.TOPIC,
        resourceName: topic,
        configs: [{ name: 'retention.bytes', configOperation: IncrementalAlterConfigOperationTypes.SET, value: '1073741824' }],
      },
    ],
  })
  cfg = await topicConfig(admin, topic, ['retention.ms', 'retention.bytes'])
  if (cfg.get('retention.ms') !== '3600000' || cfg.get('retention.bytes') !== '1073741824') {
    fail(`incrementalAlterConfigs: retention.ms=${cfg.get('retention.ms')} retention.bytes=${cfg.get('retention.bytes')}`)
  }
}

// Sends messages [from, to) in sends of SEND_SIZE, each send with the codec
// of its messages, the producers taking turns; returns, per send, the base
// offset of each partition.
async function produceRange(producers, topic, from, to) {
  const sends = []
  for (let start = from; start < to; start += SEND_SIZE) {
    const producer = producers[Math.floor(start / SEND_SIZE) % producers.length]
    const end = Math.min(start + SEND_SIZE, to)
    const messages = []
    for (let i = start; i < end; i++) {
      const { key, value, headers } = messageFor(i)
      messages.push({ topic, key, value, headers })
    }
    const codec = messageFor(start).codec
    if (messageFor(end - 1).codec !== codec) fail('a send would mix codecs')
    const result = await producer.send({ messages, acks: ProduceAcks.ALL, compression: codec })
    if (!result.offsets || result.offsets.length === 0) fail(`send of ${start}..${end}: no offsets`)
    sends.push({ start, end, offsets: result.offsets })
  }
  return sends
}

// One record of the read-back, checked against what was sent.
function checkRecord(rec, where, total) {
  const headers = new Map(rec.headers.map(([k, v]) => [k.toString(), v.toString()]))
  if (rec.headers.length !== 2 || !headers.has('seq') || !headers.has('codec')) {
    fail(`${where}: headers ${JSON.stringify([...headers])}`)
  }
  const seq = Number(headers.get('seq'))
  if (!Number.isInteger(seq) || seq < 0 || seq >= total) fail(`${where}: seq header ${headers.get('seq')}`)
  const want = messageFor(seq)
  if (!rec.key || rec.key.toString() !== want.key) fail(`${where}: key ${rec.key} for seq ${seq}`)
  if (!rec.value || rec.value.toString() !== want.value) fail(`${where}: wrong value for seq ${seq}`)
  if (headers.get('codec') !== want.codec) fail(`${where}: codec header ${headers.get('codec')} for seq ${seq}`)
  return { seq, codec: want.codec }
}

// Reads partition `partition` from offset 0 to `high` with the consumer's
// group-less fetch(); returns the seqs in offset order.
async function readPartition(consumer, nodeId, topic, topicId, partition, high, total, producerId) {
  const seqs = []
  let next = 0n
  let nextSequence = 0
  while (next < high) {
    const res = await consumer.fetch({
      node: nodeId,
      maxWaitTime: 500,
      minBytes: 1,
      maxBytes: 1 << 20,
      topics: [
        {
          topicId,
          partitions: [
            { partition, fetchOffset: next, partitionMaxBytes: 1 << 20, currentLeaderEpoch: -1, lastFetchedEpoch: -1 },
          ],
        },
      ],
    })
    if (res.errorCode !== 0) fail(`fetch ${topic}-${partition}: top-level error ${res.errorCode}`)
    const p = res.responses.flatMap(t => t.partitions).find(x => x.partitionIndex === partition)
    if (!p) fail(`fetch ${topic}-${partition} at ${next}: partition missing from the response`)
    if (p.errorCode !== 0) fail(`fetch ${topic}-${partition} at ${next}: error ${p.errorCode}`)
    if (p.highWatermark !== high) fail(`fetch ${topic}-${partition}: high watermark ${p.highWatermark}, expected ${high}`)
    if (p.logStartOffset !== 0n) fail(`fetch ${topic}-${partition}: log start ${p.logStartOffset}`)
    const before = next
    for (const batch of p.records || []) {
      if (batch.magic !== 2) fail(`${topic}-${partition}: batch magic ${batch.magic}`)
      if (batch.records.length !== batch.lastOffsetDelta + 1) {
        fail(`${topic}-${partition}@${batch.firstOffset}: ${batch.records.length} records, last delta ${batch.lastOffsetDelta}`)
      }
      for (const rec of batch.records) {
        const off = batch.firstOffset + BigInt(rec.offsetDelta)
        if (off < next) continue // a batch may start before the fetch offset
        if (off !== next) fail(`${topic}-${partition}: offset ${off} where ${next} was expected`)
        const { seq, codec } = checkRecord(rec, `${topic}-${partition}@${off}`, total)
        if ((batch.attributes & 7) !== CODEC_BITS[codec]) {
          fail(`${topic}-${partition}@${off}: batch codec bits ${batch.attributes & 7} for a ${codec} message`)
        }
        const fromIdempotent = Math.floor(seq / SEND_SIZE) % 2 === 1
        if (batch.producerId !== (fromIdempotent ? producerId : -1n)) {
          fail(`${topic}-${partition}@${off}: producer id ${batch.producerId} for seq ${seq}`)
        }
        // The idempotent producer numbers its records per partition from 0.
        if (fromIdempotent && rec.offsetDelta === 0) {
          if (batch.firstSequence !== nextSequence) fail(`${topic}-${partition}@${off}: first sequence ${batch.firstSequence}, expected ${nextSequence}`)
          nextSequence += batch.records.length
        }
        seqs.push(seq)
        next++
      }
    }
    if (next === before) fail(`fetch ${topic}-${partition} at ${next}: no records below the high watermark ${high}`)
  }
  return seqs
}

async function listOffsets(admin, topic, partitions, timestamp) {
  const res = await admin.listOffsets({
    topics: [{ name: topic, partitions: [...Array(partitions).keys()].map(i => ({ partitionIndex: i, timestamp })) }],
  })
  const t = res.find(x => x.name === topic)
  if (!t || t.partitions.length !== partitions) fail(`listOffsets(${timestamp}): ${JSON.stringify(res)}`)
  const out = new Array(partitions)
  for (const p of t.partitions) out[p.partitionIndex] = p.offset
  return out
}

// Three transactions of one transactional producer on a 1-partition topic,
// committed, aborted, committed, then read with read_committed Fetch: the
// batches come back as written, with a COMMIT/ABORT marker after each
// transaction and the aborted one named in aborted_transactions, which the
// client's fetch() uses to drop the aborted records.
async function transactions(bootstrap, admin, consumer, nodeId, topic) {
  const PER_TXN = 50
  const outcomes = [true, false, true]
  const { id: topicId } = await createTopic(admin, topic, 1, bootstrap)
  const producer = new Producer({
    ...baseOptions(bootstrap),
    serializers: stringSerializers,
    idempotent: true,
    transactionalId: `cairn-platformatic-${Date.now()}`,
  })
  for (let t = 0; t < outcomes.length; t++) {
    const tx = await producer.beginTransaction()
    const messages = []
    for (let j = 0; j < PER_TXN; j++) messages.push({ topic, key: `k-${j}`, value: `txn-${t}-${j}` })
    await tx.send({ messages, acks: ProduceAcks.ALL })
    await (outcomes[t] ? tx.commit() : tx.abort())
  }
  const producerId = producer.producerId
  await producer.close()

  const [high] = await listOffsets(admin, topic, 1, ListOffsetTimestamps.LATEST)
  const expectedHigh = BigInt(outcomes.length * (PER_TXN + 1))
  if (high !== expectedHigh) fail(`${topic}: latest offset ${high}, expected ${expectedHigh} (records and markers)`)
  const stable = await admin.listOffsets({
    topics: [{ name: topic, partitions: [{ partitionIndex: 0, timestamp: ListOffsetTimestamps.LATEST }] }],
    isolationLevel: FetchIsolationLevels.READ_COMMITTED,
  })
  if (stable[0].partitions[0].offset !== high) fail(`${topic}: read_committed latest ${stable[0].partitions[0].offset}, expected ${high}`)

  const data = [] // [offset, value]
  const markers = [] // [offset, type]
  const aborted = new Map() // first offset -> producer id
  let next = 0n
  while (next < high) {
    const res = await consumer.fetch({
      node: nodeId,
      maxWaitTime: 500,
      minBytes: 1,
      maxBytes: 1 << 20,
      isolationLevel: FetchIsolationLevels.READ_COMMITTED,
      topics: [{ topicId, partitions: [{ partition: 0, fetchOffset: next, partitionMaxBytes: 1 << 20, currentLeaderEpoch: -1, lastFetchedEpoch: -1 }] }],
    })
    const p = res.responses[0]?.partitions[0]
    if (!p || p.errorCode !== 0) fail(`read_committed fetch of ${topic} at ${next}: ${p ? 'error ' + p.errorCode : 'no partition'}`)
    if (p.lastStableOffset !== high) fail(`${topic}: last stable offset ${p.lastStableOffset}, expected ${high}`)
    for (const a of p.abortedTransactions || []) aborted.set(a.firstOffset, a.producerId)
    const before = next
    for (const batch of p.records || []) {
      if (batch.producerId !== producerId) fail(`${topic}@${batch.firstOffset}: producer id ${batch.producerId}, expected ${producerId}`)
      for (const rec of batch.records) {
        const off = batch.firstOffset + BigInt(rec.offsetDelta)
        if (off < next) continue
        // The client drops the batches of an aborted range itself.
        const skipsAborted = aborted.has(next) && off === next + BigInt(PER_TXN)
        if (off !== next && !skipsAborted) fail(`${topic}: offset ${off} where ${next} was expected`)
        next = off
        if (batch.attributes & 0x20) markers.push([off, rec.key.readInt16BE(2)]) // key: version, type
        else data.push([off, rec.value.toString()])
        next++
      }
    }
    if (next === before) fail(`read_committed fetch of ${topic} at ${next}: no records below ${high}`)
  }

  // Each transaction: PER_TXN records, then its marker (1 commit, 0 abort).
  const wantMarkers = outcomes.map((commit, t) => `${(t + 1) * (PER_TXN + 1) - 1}:${commit ? 1 : 0}`)
  if (markers.map(([o, type]) => `${o}:${type}`).join() !== wantMarkers.join()) fail(`${topic}: markers ${JSON.stringify(markers.map(String))}, expected ${wantMarkers}`)
  const abortedFirst = BigInt(PER_TXN + 1)
  if (aborted.size !== 1 || aborted.get(abortedFirst) !== producerId) {
    fail(`${topic}: aborted transactions ${JSON.stringify([...aborted].map(String))}, expected producer ${producerId} from ${abortedFirst}`)
  }
  const visible = data.map(([, v]) => v)
  const wantVisible = []
  outcomes.forEach((commit, t) => {
    if (commit) for (let j = 0; j < PER_TXN; j++) wantVisible.push(`txn-${t}-${j}`)
  })
  if (visible.join() !== wantVisible.join()) fail(`${topic}: committed records read back differ from those sent`)
  await admin.deleteTopics({ topics: [topic] })
}

// Offsets by timestamp land on the exact record inside compressed batches,
// and the max-timestamp offset is the first record holding it, as Kafka
// answers (a gzip send of ten records one second apart, then a zstd send
// peaking on its third and sixth records).
async function timestamps(bootstrap, admin, topic) {
  await createTopic(admin, topic, 1, bootstrap)
  const producer = new Producer({ ...baseOptions(bootstrap), serializers: stringSerializers })
  const t0 = BigInt(Date.now() - 60000)
  const ramp = [...Array(10).keys()].map(i => t0 + BigInt(i * 1000))
  const peak = [0, 1, 9, 2, 3, 9, 4, 5, 6, 7].map(i => t0 + 20000n + BigInt(i * 1000))
  for (const [codec, stamps] of [['gzip', ramp], ['zstd', peak]]) {
    const messages = stamps.map((timestamp, i) => ({ topic, key: `k${i}`, value: `v${i}`, timestamp }))
    await producer.send({ messages, acks: ProduceAcks.ALL, compression: codec })
  }
  await producer.close()
  const at = async timestamp => {
    const res = await admin.listOffsets({ topics: [{ name: topic, partitions: [{ partitionIndex: 0, timestamp }] }] })
    const p = res[0].partitions[0]
    return `${p.offset}@${p.timestamp}`
  }
  const cases = [
    [t0 + 4500n, `5@${t0 + 5000n}`],
    [t0 + 10000n, `10@${t0 + 20000n}`],
    [t0 + 28500n, `12@${t0 + 29000n}`],
    [ListOffsetTimestamps.MAX, `12@${t0 + 29000n}`],
  ]
  for (const [timestamp, want] of cases) {
    const got = await at(timestamp)
    if (got !== want) fail(`${topic}: listOffsets(${timestamp}) is ${got}, expected ${want}`)
  }
  await admin.deleteTopics({ topics: [topic] })
}

async function basic(bootstrap) {
  const PARTITIONS = 3
  const admin = new Admin(baseOptions(bootstrap))
  const topic = `platformatic-basic-${Date.now()}`
  const { id: topicId, nodeId } = await createTopic(admin, topic, PARTITIONS, bootstrap, { 'retention.ms': '86400000' })
  await checkConfigs(admin, topic)

  const t0 = Date.now()
  // Every other send comes from an idempotent producer (InitProducerId,
  // sequence numbers in the batches).
  const plain = new Producer({ ...baseOptions(bootstrap), serializers: stringSerializers })
  const idempotent = new Producer({ ...baseOptions(bootstrap), serializers: stringSerializers, idempotent: true })
  const sends = await produceRange([plain, idempotent], topic, 0, TOTAL)
  const producerId = idempotent.producerId
  if (typeof producerId !== 'bigint' || producerId < 0n) fail(`idempotent producer id ${producerId}`)
  await plain.close()
  await idempotent.close()
  const t1 = Date.now()

  const earliest = await listOffsets(admin, topic, PARTITIONS, ListOffsetTimestamps.EARLIEST)
  const latest = await listOffsets(admin, topic, PARTITIONS, ListOffsetTimestamps.LATEST)
  const byTime = await listOffsets(admin, topic, PARTITIONS, 0n)
  for (let p = 0; p < PARTITIONS; p++) {
    if (earliest[p] !== 0n) fail(`listOffsets earliest of partition ${p}: ${earliest[p]}`)
    if (byTime[p] !== 0n) fail(`listOffsets for timestamp 0 of partition ${p}: ${byTime[p]}`)
    if (latest[p] === 0n) fail(`partition ${p} received no messages`)
  }
  const sum = latest.reduce((a, b) => a + b, 0n)
  if (sum !== BigInt(TOTAL)) fail(`listOffsets latest sums to ${sum}, expected ${TOTAL}`)

  const consumer = new Consumer({ ...baseOptions(bootstrap), groupId: `platformatic-unused-${Date.now()}` })
  const seen = new Uint8Array(TOTAL)
  const byPartition = []
  for (let p = 0; p < PARTITIONS; p++) {
    const seqs = await readPartition(consumer, nodeId, topic, topicId, p, latest[p], TOTAL, producerId)
    // Sends were sequential, so each partition holds increasing seqs.
    for (let i = 1; i < seqs.length; i++) {
      if (seqs[i] <= seqs[i - 1]) fail(`${topic}-${p}: seq ${seqs[i]} at offset ${i} after ${seqs[i - 1]}`)
    }
    for (const s of seqs) {
      if (seen[s]) fail(`seq ${s} read twice`)
      seen[s] = 1
    }
    byPartition.push(seqs)
  }
  const missing = seen.indexOf(0)
  if (missing >= 0) fail(`seq ${missing} was never read`)

  // Each send's base offset per partition is where its first message there landed.
  for (const { start, end, offsets } of sends) {
    for (const { partition, offset } of offsets) {
      const seqs = byPartition[partition]
      const at = Number(offset)
      if (!(seqs[at] >= start && seqs[at] < end)) fail(`send ${start}..${end}: base offset ${offset} of partition ${partition} holds seq ${seqs[at]}`)
      if (at > 0 && seqs[at - 1] >= start) fail(`send ${start}..${end}: base offset ${offset} of partition ${partition} is not its first`)
    }
  }
  const t2 = Date.now()

  await transactions(bootstrap, admin, consumer, nodeId, `${topic}-txn`)
  await timestamps(bootstrap, admin, `${topic}-ts`)
  await consumer.close()
  await checkVersionsAdvertised(admin)
  await admin.deleteTopics({ topics: [topic] })
  const after = await admin.listTopics()
  if (after.includes(topic)) fail(`${topic} still listed after deleteTopics`)
  await admin.close()
  const counts = byPartition.map(s => s.length).join('/')
  console.log(`platformatic basic: ${TOTAL} messages (${CODECS.join(', ')}) produced in ${t1 - t0} ms to partitions ${counts}, read back and checked in ${t2 - t1} ms; transactions and timestamps checked in ${Date.now() - t2} ms`)
}

// Polls `cond` every 50 ms until it holds; fails with `what` after `ms`.
async function waitFor(what, ms, cond) {
  const until = Date.now() + ms
  while (!(await cond())) {
    if (Date.now() > until) fail(`timed out after ${ms} ms waiting for ${what}`)
    await new Promise(r => setTimeout(r, 50))
  }
}

function assignedPartitions(consumer, topic) {
  const a = (consumer.assignments || []).find(x => x.topic === topic)
  return a ? [...a.partitions].sort((x, y) => x - y) : []
}

function assignmentKey(consumer, topic) {
  return `${consumer.generationId}:${assignedPartitions(consumer, topic).join()}`
}

// Whether the member has settled into its current assignment: its stream
// has read the committed offsets again for it (the 'offsets' event after
// a join) and a fetch has ended since. The client answers a fetch sent
// before the join with records it then rewinds to the committed offsets
// when the refresh lands later, so records are produced only once both
// have happened (the broker's answers are the same either way).
function settled(member, topic) {
  return member.refreshedFor === assignmentKey(member.consumer, topic) && member.fetchedSinceRefresh
}

// A group member: a consumer, its stream, and what it has read. Every
// record is checked on arrival; a record read twice by any member, or from
// a partition the member does not own, fails the test.
async function startMember(bootstrap, name, groupId, topic, total, seen, errors) {
  const consumer = new Consumer({ ...baseOptions(bootstrap), clientId: `cairn-platformatic-${name}`, groupId })
  const stream = await consumer.consume({
    topics: [topic],
    mode: 'committed',
    fallbackMode: 'earliest',
    autocommit: false,
    sessionTimeout: 10000,
    rebalanceTimeout: 10000,
    heartbeatInterval: 500,
    maxWaitTime: 300,
  })
  const member = { name, consumer, stream, count: 0, next: new Map(), refreshedFor: null, fetchedSinceRefresh: false }
  stream.on('offsets', () => {
    member.refreshedFor = assignmentKey(consumer, topic)
    member.fetchedSinceRefresh = false
  })
  stream.on('fetch', () => {
    if (member.refreshedFor) member.fetchedSinceRefresh = true
  })
  stream.on('data', m => {
    try {
      const where = `${name} ${m.topic}-${m.partition}@${m.offset}`
      if (!assignedPartitions(consumer, topic).includes(m.partition)) fail(`${where}: partition not assigned to ${name}`)
      const expected = member.next.get(m.partition)
      if (expected !== undefined && m.offset !== expected) fail(`${where}: expected offset ${expected}`)
      member.next.set(m.partition, m.offset + 1n)
      const { seq } = checkRecord({ key: m.key, value: m.value, headers: m.headerEntries }, where, total)
      if (seen[seq]) fail(`${where}: seq ${seq} read a second time`)
      seen[seq] = 1
      member.count++
    } catch (e) {
      errors.push(e)
    }
  })
  stream.on('error', e => errors.push(e))
  return member
}

async function commitRead(member, topic) {
  const offsets = [...member.next].map(([partition, offset]) => ({ topic, partition, offset, leaderEpoch: -1 }))
  if (offsets.length === 0) fail(`${member.name} has nothing to commit`)
  await member.consumer.commit({ offsets })
}

async function checkCommitted(admin, groupId, topic, latest) {
  const res = await admin.listConsumerGroupOffsets({ groups: [groupId] })
  const t = res.find(g => g.groupId === groupId)?.topics.find(x => x.name === topic)
  if (!t) fail(`listConsumerGroupOffsets: no offsets of ${groupId} for ${topic}`)
  for (let p = 0; p < latest.length; p++) {
    const c = t.partitions.find(x => x.partitionIndex === p)
    if (!c || c.committedOffset !== latest[p]) fail(`committed offset of ${topic}-${p}: ${c && c.committedOffset}, expected ${latest[p]}`)
  }
}

async function describeGroup(admin, groupId) {
  const groups = await admin.describeGroups({ groups: [groupId] })
  const g = groups.get(groupId)
  if (!g) fail(`describeGroups has no ${groupId}`)
  return g
}

async function group(bootstrap) {
  const PARTITIONS = 4
  const FIRST = 2000
  const SECOND = 1000
  const total = FIRST + SECOND
  const admin = new Admin(baseOptions(bootstrap))
  const topic = `platformatic-group-${Date.now()}`
  const groupId = `platformatic-group-${Date.now()}`
  await createTopic(admin, topic, PARTITIONS, bootstrap)
  const producer = new Producer({ ...baseOptions(bootstrap), serializers: stringSerializers })
  const seen = new Uint8Array(total)
  const errors = []
  const checkErrors = () => {
    if (errors.length) throw errors[0]
  }

  const a = await startMember(bootstrap, 'A', groupId, topic, total, seen, errors)
  await waitFor('A to own all partitions', 15000, () => assignedPartitions(a.consumer, topic).length === PARTITIONS)
  const b = await startMember(bootstrap, 'B', groupId, topic, total, seen, errors)
  await waitFor('A and B to share the partitions', 20000, () => {
    checkErrors()
    const pa = assignedPartitions(a.consumer, topic)
    const pb = assignedPartitions(b.consumer, topic)
    const union = new Set([...pa, ...pb])
    return (
      a.consumer.generationId === b.consumer.generationId &&
      pa.length > 0 &&
      pb.length > 0 &&
      pa.length + pb.length === PARTITIONS &&
      union.size === PARTITIONS &&
      settled(a, topic) &&
      settled(b, topic)
    )
  })

  await produceRange([producer], topic, 0, FIRST)
  await waitFor(`${FIRST} records between A and B`, 15000, () => {
    checkErrors()
    return a.count + b.count >= FIRST
  })
  await new Promise(r => setTimeout(r, 300)) // room for a duplicate to show
  checkErrors()
  if (a.count === 0 || b.count === 0 || a.count + b.count !== FIRST) fail(`A read ${a.count}, B read ${b.count}, expected ${FIRST} between them, each some`)
  for (let s = 0; s < FIRST; s++) if (!seen[s]) fail(`seq ${s} read by neither member`)

  const listed = await admin.listGroups()
  const g0 = listed.get(groupId)
  if (!g0 || g0.state !== 'Stable' || g0.protocolType !== 'consumer') fail(`listGroups: ${JSON.stringify(g0)}`)
  if (!(await admin.listGroups({ states: ['Stable'] })).has(groupId)) fail('listGroups(Stable) leaves the group out')
  if ((await admin.listGroups({ states: ['Empty'] })).has(groupId)) fail('listGroups(Empty) lists the Stable group')
  const described = await describeGroup(admin, groupId)
  if (described.state !== 'Stable' || described.members.size !== 2) fail(`describeGroups: ${described.state}, ${described.members.size} members`)
  for (const m of [a, b]) {
    const dm = described.members.get(m.consumer.memberId)
    if (!dm) fail(`describeGroups does not list ${m.name} (${m.consumer.memberId})`)
    const got = [...(dm.assignments?.get(topic)?.partitions || [])].sort((x, y) => x - y)
    if (got.join() !== assignedPartitions(m.consumer, topic).join()) fail(`describeGroups: ${m.name} assigned ${got}, the member says ${assignedPartitions(m.consumer, topic)}`)
  }

  await commitRead(a, topic)
  await commitRead(b, topic)
  const latestFirst = await listOffsets(admin, topic, PARTITIONS, ListOffsetTimestamps.LATEST)
  await checkCommitted(admin, groupId, topic, latestFirst)

  // A leaves; B must take over A's partitions from A's commits.
  const bBefore = b.count
  await a.stream.close()
  await a.consumer.close()
  await waitFor('B to own all partitions and settle into them', 20000, () => {
    checkErrors()
    return assignedPartitions(b.consumer, topic).length === PARTITIONS && settled(b, topic)
  })
  await produceRange([producer], topic, FIRST, total)
  await waitFor(`${SECOND} new records read by B`, 15000, () => {
    checkErrors()
    return b.count - bBefore >= SECOND
  })
  await new Promise(r => setTimeout(r, 300))
  checkErrors()
  if (b.count - bBefore !== SECOND) fail(`B read ${b.count - bBefore} records after the takeover, expected ${SECOND}`)
  for (let s = FIRST; s < total; s++) if (!seen[s]) fail(`seq ${s} not read after the takeover`)

  await commitRead(b, topic)
  const latest = await listOffsets(admin, topic, PARTITIONS, ListOffsetTimestamps.LATEST)
  await checkCommitted(admin, groupId, topic, latest)
  const alone = await describeGroup(admin, groupId)
  if (alone.members.size !== 1 || !alone.members.has(b.consumer.memberId)) fail(`describeGroups after A left: ${[...alone.members.keys()]}`)

  await b.stream.close()
  await b.consumer.close()
  await producer.close()
  const empty = await describeGroup(admin, groupId)
  if (empty.state !== 'Empty' || empty.members.size !== 0) fail(`describeGroups after both left: ${empty.state}, ${empty.members.size} members`)
  if (!(await admin.listGroups({ states: ['Empty'] })).has(groupId)) fail('listGroups(Empty) leaves the empty group out')
  await checkCommitted(admin, groupId, topic, latest)
  await admin.deleteGroups({ groups: [groupId] })
  if ((await admin.listGroups()).has(groupId)) fail(`${groupId} still listed after deleteGroups`)
  await checkVersionsAdvertised(admin)
  await admin.deleteTopics({ topics: [topic] })
  await admin.close()
  console.log(`platformatic group: A read ${a.count}, B read ${bBefore} then ${SECOND} more after taking over A's partitions from its commits`)
}

async function main() {
  const [bootstrap, mode = 'basic'] = process.argv.slice(2)
  if (!bootstrap) {
    console.error('usage: node compat.mjs <host:port> [basic|group]')
    return 2
  }
  if (mode === 'basic') await basic(bootstrap)
  else if (mode === 'group') await group(bootstrap)
  else {
    console.error(`unknown mode ${mode}`)
    return 2
  }
  console.log(`platformatic ${mode}: API versions sent: ${versionsReport()}`)
  return 0
}

const deadline = setTimeout(() => {
  console.error(`platformatic compat: timed out after ${MODE_DEADLINE_MS / 1000} s; API versions sent so far: ${versionsReport()}`)
  process.exit(1)
}, MODE_DEADLINE_MS)
main().then(
  code => {
    clearTimeout(deadline)
    process.exit(code)
  },
  err => {
    console.error(`platformatic compat: FAILED: ${err.stack || err}`)
    if (err.errors) for (const e of err.errors) console.error(`  caused by: ${e.stack || e}`)
    console.error(`API versions sent: ${versionsReport()}`)
    process.exit(1)
  }
)
