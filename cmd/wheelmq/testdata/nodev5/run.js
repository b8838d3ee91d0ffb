// Drives wheelmq's gRPC endpoint (apache.rocketmq.v2.MessagingService) from
// the RocketMQ 5 Node.js SDK, rocketmq-client-nodejs, for cmd/wheelmq's
// TestNodeV5SDK. It prints one JSON line per event on stdout; the Go test
// asserts on those lines itself and does not trust the final verdict alone.
//
// Environment: WHEELMQ_ENDPOINT (host:port of the gRPC endpoint),
// WHEELMQ_TOPIC, WHEELMQ_GROUP, WHEELMQ_COUNT (plain messages),
// WHEELMQ_TIMER_MS (delay of the timer messages), WHEELMQ_DEADLINE_MS.
'use strict';

const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');

const endpoints = process.env.WHEELMQ_ENDPOINT;
const topic = process.env.WHEELMQ_TOPIC;
const group = process.env.WHEELMQ_GROUP;
const count = Number(process.env.WHEELMQ_COUNT || '5');
const timerMs = Number(process.env.WHEELMQ_TIMER_MS || '3000');
const deadline = Date.now() + Number(process.env.WHEELMQ_DEADLINE_MS || '45000');

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

async function main() {
  const failures = [];
  const consumer = new SimpleConsumer({
    consumerGroup: group,
    endpoints,
    subscriptions: new Map().set(topic, '*'),
    awaitDuration: 3000,
  });
  await consumer.startup();
  emit({ event: 'started', where: 'consumer' });

  const producer = new Producer({ endpoints, topics: [ topic ] });
  await producer.startup();
  emit({ event: 'started', where: 'producer' });

  const want = new Map();
  for (let i = 0; i < count; i++) {
    const key = `plain-${i}`;
    const r = await producer.send({ topic, tag: 'plain', keys: [ key ], body: Buffer.from(key) });
    want.set(key, { dueMs: 0 });
    emit({ event: 'sent', key, tag: 'plain', status: 'SEND_OK', message: r.messageId });
  }
  for (let i = 0; i < 2; i++) {
    const key = `timer-${i}`;
    const due = Date.now() + timerMs;
    const r = await producer.send({ topic, tag: 'timer', keys: [ key ], deliveryTimestamp: new Date(due), body: Buffer.from(key) });
    want.set(key, { dueMs: due });
    emit({ event: 'sent', key, tag: 'timer', status: 'SEND_OK', dueMs: due, message: r.messageId });
  }
  // A timer message recalled before it is due must never arrive.
  const recalledDue = Date.now() + timerMs;
  const rr = await producer.send({ topic, tag: 'recalled', keys: [ 'recalled' ], deliveryTimestamp: new Date(recalledDue), body: Buffer.from('recalled') });
  emit({ event: 'sent', key: 'recalled', tag: 'recalled', status: 'SEND_OK', dueMs: recalledDue, message: rr.messageId });
  try {
    await producer.recallMessage(topic, rr.recallHandle);
    emit({ event: 'recalled', key: 'recalled', ok: true });
  } catch (err) {
    emit({ event: 'recalled', key: 'recalled', ok: false, message: String(err && err.message || err) });
    failures.push('recall: ' + String(err && err.message || err));
  }

  const got = new Map();
  while (Date.now() < deadline && (got.size < want.size || Date.now() < recalledDue + 1500)) {
    const msgs = await consumer.receive(16, 15000);
    for (const m of msgs) {
      const key = m.keys[0] || '';
      emit({ event: 'received', key, tag: m.tag || '', receivedAt: Date.now(),
        dueMs: m.deliveryTimestamp ? m.deliveryTimestamp.getTime() : 0,
        reconsumeTimes: (m.deliveryAttempt || 0) - 1, message: m.messageId });
      got.set(key, true);
      await consumer.ack(m);
      emit({ event: 'acked', key });
    }
  }
  for (const key of want.keys()) {
    if (!got.has(key)) failures.push('never received ' + key);
  }
  if (got.has('recalled')) failures.push('the recalled timer message was delivered');
  await producer.shutdown();
  await consumer.shutdown();
  emit({ event: 'result', ok: failures.length === 0, failures });
}

const timer = setTimeout(() => {
  emit({ event: 'result', ok: false, failures: [ 'deadline passed' ] });
  process.exit(3);
}, Math.max(1000, deadline - Date.now() + 10000));

main().then(() => {
  clearTimeout(timer);
  process.exit(0);
}).catch((err) => {
  emit({ event: 'result', ok: false, failures: [ 'exception: ' + String(err && err.stack || err) ] });
  clearTimeout(timer);
  process.exit(2);
});
