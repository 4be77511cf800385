'use strict'
// kafkajs 2.2.4 against a running broker. Starts nothing itself.
//
//   node compat.js <bootstrap host:port> [basic|group]
//
// basic: admin (create topic, metadata, offsets, configs), a producer sending
//   10,000 keyed messages with headers to 4 partitions, half gzip and half
//   uncompressed, and a read-back through kafkajs's own Fetch request
//   (kafkajs has no consumer without a group) checking every message once.
// group: a group consumer reading a topic from the beginning; exits 77
//   (skipped) while the broker does not serve JoinGroup.
//
// Exit status: 0 passed, 1 failed, 77 skipped.

const { Kafka, CompressionTypes, Partitioners, logLevel } = require('kafkajs')

const SKIP = 77
const TOTAL = 10000
const PARTITIONS = 4
const BATCH = 500
const API_KEY_JOIN_GROUP = 11

function fail(msg) {
  throw new Error(msg)
}

function makeKafka(bootstrap) {
  return new Kafka({
    clientId: 'cairn-kafkajs-compat',
    brokers: [bootstrap],
    logLevel: logLevel.WARN,
    retry: { retries: 5, initialRetryTime: 100 },
  })
}

// kafkajs keeps its cluster factory behind a symbol; the read-back uses it
// to send Fetch requests directly. Pinned to kafkajs 2.2.4.
function makeCluster(kafka) {
  const sym = Object.getOwnPropertySymbols(kafka).find(s => s.description === 'private:Kafka:createCluster')
  if (!sym) fail('kafkajs internals changed: no cluster factory')
  return kafka[sym]({ allowAutoTopicCreation: false })
}

function messageFor(i) {
  return {
    key: `key-${i}`,
    value: `value-${i}-${'x'.repeat(i % 97)}`,
    headers: { seq: String(i), codec: i < TOTAL / 2 ? 'gzip' : 'none' },
  }
}

async function createTopic(admin, topic) {
  const created = await admin.createTopics({
    topics: [{ topic, numPartitions: PARTITIONS, replicationFactor: 1 }],
    waitForLeaders: true,
  })
  if (!created) fail(`createTopics(${topic}) returned false`)
  const topics = await admin.listTopics()
  if (!topics.includes(topic)) fail(`listTopics does not include ${topic}`)
  const md = await admin.fetchTopicMetadata({ topics: [topic] })
  const parts = md.topics[0].partitions
  if (parts.length !== PARTITIONS) fail(`${topic} has ${parts.length} partitions, expected ${PARTITIONS}`)
  for (const p of parts) if (p.leader < 0) fail(`${topic}-${p.partitionId} has no leader`)
}

async function produceAll(kafka, topic, total) {
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner })
  await producer.connect()
  const perPartition = new Map()
  for (let start = 0; start < total; start += BATCH) {
    const messages = []
    for (let i = start; i < Math.min(start + BATCH, total); i++) messages.push(messageFor(i))
    const gzip = start < total / 2
    const acks = await producer.send({
      topic,
      messages,
      acks: -1,
      compression: gzip ? CompressionTypes.GZIP : CompressionTypes.None,
    })
    for (const a of acks) {
      if (a.errorCode !== 0) fail(`produce to ${a.topicName}-${a.partition}: error ${a.errorCode}`)
      perPartition.set(a.partition, (perPartition.get(a.partition) || 0) + 1)
    }
  }
  await producer.disconnect()
  if (perPartition.size !== PARTITIONS) fail(`messages reached ${perPartition.size} partitions, expected ${PARTITIONS}`)
}

// Checks one message against what was sent; returns its sequence number.
function checkMessage(m, where) {
  const seqHeader = m.headers && m.headers.seq
  if (!seqHeader) fail(`${where}: message without a seq header`)
  const seq = Number(seqHeader.toString())
  const want = messageFor(seq)
  if (!m.key || m.key.toString() !== want.key) fail(`${where}: key ${m.key} for seq ${seq}`)
  if (!m.value || m.value.toString() !== want.value) fail(`${where}: wrong value for seq ${seq}`)
  if (!m.headers.codec || m.headers.codec.toString() !== want.headers.codec) fail(`${where}: wrong codec header for seq ${seq}`)
  return seq
}

async function readBack(kafka, admin, topic, total) {
  const offsets = await admin.fetchTopicOffsets(topic)
  let sum = 0
  for (const o of offsets) sum += Number(o.high) - Number(o.low)
  if (sum !== total) fail(`fetchTopicOffsets: ${sum} messages across partitions, expected ${total}`)
  const earliest = await admin.fetchTopicOffsetsByTimestamp(topic, 0)
  for (const o of earliest) if (Number(o.offset) !== 0) fail(`offset for timestamp 0 of partition ${o.partition} is ${o.offset}`)

  const cluster = makeCluster(kafka)
  await cluster.connect()
  await cluster.addTargetTopic(topic)
  const seen = new Uint8Array(total)
  let count = 0
  for (const o of offsets) {
    const partition = o.partition
    const high = Number(o.high)
    const leaders = cluster.findLeaderForPartitions(topic, [partition])
    const nodeId = Object.keys(leaders)[0]
    const broker = await cluster.findBroker({ nodeId })
    let next = 0
    let lastOffset = -1
    while (next < high) {
      const res = await broker.fetch({
        replicaId: -1,
        isolationLevel: 1,
        maxWaitTime: 500,
        minBytes: 1,
        maxBytes: 1 << 20,
        topics: [{ topic, partitions: [{ partition, fetchOffset: String(next), maxBytes: 1 << 20 }] }],
      })
      const p = res.responses[0].partitions[0]
      if (p.errorCode !== 0) fail(`fetch ${topic}-${partition} at ${next}: error ${p.errorCode}`)
      if (Number(p.highWatermark) !== high) fail(`fetch ${topic}-${partition}: high watermark ${p.highWatermark}, expected ${high}`)
      const messages = p.messages.filter(m => Number(m.offset) >= next)
      if (messages.length === 0) fail(`fetch ${topic}-${partition} at ${next}: no messages below the high watermark`)
      for (const m of messages) {
        const off = Number(m.offset)
        if (off <= lastOffset) fail(`${topic}-${partition}: offset ${off} after ${lastOffset}`)
        lastOffset = off
        const seq = checkMessage(m, `${topic}-${partition}@${off}`)
        if (seen[seq]) fail(`seq ${seq} read twice`)
        seen[seq] = 1
        count++
      }
      next = lastOffset + 1
    }
  }
  await cluster.disconnect()
  if (count !== total) fail(`read ${count} messages, expected ${total}`)
}

async function basic(bootstrap) {
  const kafka = makeKafka(bootstrap)
  const admin = kafka.admin()
  await admin.connect()
  const topic = `kafkajs-basic-${Date.now()}`
  await createTopic(admin, topic)
  const cfg = await admin.describeConfigs({ resources: [{ type: 2, name: topic }], includeSynonyms: false })
  const entry = cfg.resources[0].configEntries.find(e => e.configName === 'cleanup.policy')
  if (!entry || entry.configValue !== 'delete') fail('describeConfigs: cleanup.policy is not delete')
  await admin.alterConfigs({
    validateOnly: false,
    resources: [{ type: 2, name: topic, configEntries: [{ name: 'retention.ms', value: '3600000' }] }],
  })
  const altered = await admin.describeConfigs({ resources: [{ type: 2, name: topic, configNames: ['retention.ms'] }] })
  const retention = altered.resources[0].configEntries.find(e => e.configName === 'retention.ms')
  if (!retention || retention.configValue !== '3600000') fail(`alterConfigs: retention.ms reads ${retention && retention.configValue}`)

  const t0 = Date.now()
  await produceAll(kafka, topic, TOTAL)
  const t1 = Date.now()
  await readBack(kafka, admin, topic, TOTAL)
  const t2 = Date.now()
  await admin.deleteTopics({ topics: [topic] })
  await admin.disconnect()
  console.log(`kafkajs basic: ${TOTAL} messages produced in ${t1 - t0} ms, read back and checked in ${t2 - t1} ms`)
}

async function brokerServes(kafka, apiKey) {
  const cluster = makeCluster(kafka)
  await cluster.connect()
  const broker = cluster.brokerPool.seedBroker
  const served = broker.versions && broker.versions[apiKey] !== undefined
  await cluster.disconnect()
  return served
}

async function group(bootstrap) {
  const kafka = makeKafka(bootstrap)
  if (!(await brokerServes(kafka, API_KEY_JOIN_GROUP))) {
    console.log('kafkajs group: SKIPPED, the broker does not serve JoinGroup')
    return SKIP
  }
  const admin = kafka.admin()
  await admin.connect()
  const topic = `kafkajs-group-${Date.now()}`
  await createTopic(admin, topic)
  const total = 2000
  await produceAll(kafka, topic, total)

  const consumer = kafka.consumer({ groupId: `kafkajs-group-${Date.now()}` })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const seen = new Uint8Array(total)
  let count = 0
  await new Promise((resolve, reject) => {
    consumer
      .run({
        eachMessage: async ({ partition, message }) => {
          try {
            const seq = checkMessage(message, `${topic}-${partition}@${message.offset}`)
            // One member, no rebalance after the first assignment: every
            // record is read exactly once, as the other clients' tests check.
            if (seen[seq]) throw new Error(`seq ${seq} read twice (${topic}-${partition}@${message.offset})`)
            seen[seq] = 1
            count++
            if (count === total) resolve()
          } catch (e) {
            reject(e)
          }
        },
      })
      .catch(reject)
  })
  await consumer.disconnect()
  await admin.deleteTopics({ topics: [topic] })
  await admin.disconnect()
  console.log(`kafkajs group: ${total} messages consumed through a consumer group`)
  return 0
}

async function main() {
  const [bootstrap, mode = 'basic'] = process.argv.slice(2)
  if (!bootstrap) {
    console.error('usage: node compat.js <host:port> [basic|group]')
    return 2
  }
  if (mode === 'basic') {
    await basic(bootstrap)
    return 0
  }
  if (mode === 'group') return await group(bootstrap)
  console.error(`unknown mode ${mode}`)
  return 2
}

const deadline = setTimeout(() => {
  console.error('kafkajs compat: timed out after 90 s')
  process.exit(1)
}, 90000)

main().then(
  code => {
    clearTimeout(deadline)
    process.exit(code)
  },
  err => {
    console.error(`kafkajs compat: FAILED: ${err.stack || err}`)
    process.exit(1)
  }
)
