'use strict';

// Drives a wheelmq broker with an ACL from ali-ons with its keys
// (accessKey/secretKey): ali-ons signs every request, name server included,
// with OnsChannel=ALIYUN and its header numbers as JSON numbers (signed as
// their literal text). A producer with the right keys sends, a consumer
// with them receives, a producer with a wrong secret is refused. One JSON
// object per line on stdout ("sent", "received", "refused", "error", and a
// final "result"); cmd/wheelmq/nodeclient_acl_test.go asserts on them.
//
// Environment:
//   WHEELMQ_NAMESRV  name server address (required)
//   WHEELMQ_TOPIC    an existing topic the keys may PUB and SUB (required)
//   WHEELMQ_GROUP    a consumer group the keys may SUB (required)
//   WHEELMQ_AK, WHEELMQ_SK  the account (required)
//   WHEELMQ_COUNT    messages (default 3)

const { Producer, Consumer, Message } = require('ali-ons');

const nameSrv = need('WHEELMQ_NAMESRV');
const topic = need('WHEELMQ_TOPIC');
const group = need('WHEELMQ_GROUP');
const accessKey = need('WHEELMQ_AK');
const secretKey = need('WHEELMQ_SK');
const count = Number(process.env.WHEELMQ_COUNT || 3);

function need(name) {
  const v = process.env[name];
  if (!v) {
    emit({ event: 'error', where: 'config', message: `${name} is not set` });
    process.exit(2);
  }
  return v;
}

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

const httpclient = { async request() { throw new Error('unused: nameSrv is given'); } };
const logger = { debug() {}, info() {}, warn() {}, error(...args) { console.error('[ali-ons error]', ...args); } };

function sleep(ms) {
  return new Promise(resolve => setTimeout(resolve, ms));
}

async function main() {
  const failures = [];
  const common = { httpclient, nameSrv, logger, accessKey, secretKey, pollNameServerInteval: 1000 };
  const producer = new Producer({ ...common, instanceName: `acl-good-${process.pid}`, producerGroup: `${group}-producer` });
  producer.on('error', err => emit({ event: 'error', where: 'producer', message: err.message }));
  await producer.ready();
  for (let i = 0; i < count; i++) {
    const msg = new Message(topic, 'TagA', `signed ${i}`);
    msg.keys = [ `${topic}-${i}` ];
    const res = await producer.send(msg);
    emit({ event: 'sent', key: `${topic}-${i}`, status: res.sendStatus });
    if (res.sendStatus !== 'SEND_OK') {
      failures.push(`send ${i}: ${res.sendStatus}`);
    }
  }

  const received = new Set();
  const consumer = new Consumer({ ...common, instanceName: `acl-good-${process.pid}`, consumerGroup: group,
    consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET' });
  consumer.on('error', err => emit({ event: 'error', where: 'consumer', message: err.message }));
  consumer.subscribe(topic, '*', async msg => {
    received.add(msg.keys);
    emit({ event: 'received', key: msg.keys });
  });
  await consumer.ready();
  for (let waited = 0; received.size < count && waited < 30000; waited += 100) {
    await sleep(100);
  }
  if (received.size < count) {
    failures.push(`received ${received.size} of ${count}`);
  }

  // Another client (instance name) with a wrong secret: refused.
  const bad = new Producer({ ...common, secretKey: secretKey + '-wrong', instanceName: `acl-bad-${process.pid}`,
    producerGroup: `${group}-bad` });
  bad.on('error', () => {});
  try {
    await Promise.race([ bad.ready(), sleep(10000) ]);
    const res = await bad.send(new Message(topic, 'TagA', 'must be refused'));
    failures.push(`a wrong secret sent: ${res.sendStatus}`);
  } catch (err) {
    emit({ event: 'refused', message: err.message });
  }

  emit({ event: 'result', ok: failures.length === 0, failures });
  await Promise.race([ Promise.all([ consumer.close(), producer.close(), bad.close() ]), sleep(5000) ]);
  return failures.length === 0;
}

const hardStop = setTimeout(() => {
  emit({ event: 'result', ok: false, failures: [ 'hard deadline 60000 ms passed' ] });
  process.exit(1);
}, 60000);
hardStop.unref();

main().then(ok => process.exit(ok ? 0 : 1), err => {
  emit({ event: 'result', ok: false, failures: [ `${err.name}: ${err.message}` ] });
  process.exit(1);
});
