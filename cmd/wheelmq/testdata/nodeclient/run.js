'use strict';

// Drives a wheelmq broker with ali-ons, Alibaba's pure-JavaScript RocketMQ
// remoting client: sync sends with tags and keys, a push consumer with a tag
// filter, a timer message (TIMER_DELIVER_MS), and a message the handler
// asks to retry (CONSUMER_SEND_MSG_BACK, redelivered through the group's
// %RETRY% topic after delay level 3, 10 s). It prints one JSON object
// per line on stdout (events "sent", "received", "error", and a final
// "result") and exits 0 when every check passed, 1 otherwise. The Go test
// (cmd/wheelmq/nodeclient_test.go) reads the lines and asserts on them
// itself; the checks here only make a manual run readable.
//
// Environment:
//   WHEELMQ_NAMESRV    name server address, host:port (required)
//   WHEELMQ_TOPIC      topic to use (required; created on first send)
//   WHEELMQ_GROUP      consumer group (required)
//   WHEELMQ_COUNT      messages per tag (default 5)
//   WHEELMQ_TIMER_MS   delay of the timer message in ms (default 3000)
//   WHEELMQ_DEADLINE_MS  give up after this long (default 45000)

const { Producer, Consumer, Message } = require('ali-ons');
// ali-ons has no admin API; its remoting layer is used as is to create the topic.
const MQClientAPI = require('ali-ons/lib/mq_client_api');
const RemotingCommand = require('ali-ons/lib/protocol/command/remoting_command');
const RequestCode = require('ali-ons/lib/protocol/request_code');

const nameSrv = need('WHEELMQ_NAMESRV');
const topic = need('WHEELMQ_TOPIC');
const group = need('WHEELMQ_GROUP');
const count = Number(process.env.WHEELMQ_COUNT || 5);
const timerDelay = Number(process.env.WHEELMQ_TIMER_MS || 3000);
const deadlineMs = Number(process.env.WHEELMQ_DEADLINE_MS || 45000);

// The consumer subscribes to these tags; messages tagged TagC must not reach it.
const filter = 'TagA || TagB';
const wantedTags = ['TagA', 'TagB'];
const allTags = ['TagA', 'TagB', 'TagC'];

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

// ali-ons insists on an HTTP client for looking up name servers by URL; with
// nameSrv given it never calls it.
const httpclient = {
  async request() {
    throw new Error('unused: nameSrv is given');
  },
};

// A quiet logger: ali-ons logs a lot at info; errors still reach stderr.
const logger = {
  debug() {},
  info() {},
  warn(...args) { console.error('[ali-ons warn]', ...args); },
  error(...args) { console.error('[ali-ons error]', ...args); },
};

// Producer and consumer share one MQClient (same instanceName), made with
// the options of whichever starts first. The consumer looks up its %RETRY%
// topic's route before its first heartbeat makes the broker create it (so
// the first lookup fails, with a Java broker too); routes are polled every
// second instead of 30 s so the retry queue is found soon after.
const common = {
  httpclient, nameSrv, logger,
  instanceName: `wheelmq-test-${process.pid}`,
  pollNameServerInteval: 1000,
};

async function main() {
  await createTopic();

  const producer = new Producer({ ...common, producerGroup: `${group}-producer` });
  producer.on('error', err => emit({ event: 'error', where: 'producer', message: err.message }));
  await producer.ready();

  // A message before the consumer starts: with CONSUME_FROM_FIRST_OFFSET it
  // is read, and its tag is none the consumer asks for.
  await send(producer, 'TagC', 'before the consumer', `${topic}-early`);

  // Every message the consumer must get, known before the first arrives.
  const timerKey = `${topic}-timer`;
  const expected = new Map(); // key -> tag
  for (let i = 0; i < count; i++) {
    for (const tag of wantedTags) {
      expected.set(`${topic}-${tag}-${i}`, tag);
    }
  }
  expected.set(timerKey, 'TagA');
  // The handler answers ACTION_RETRY the first time it sees this one; it
  // must come back once more.
  const retryKey = `${topic}-TagB-0`;
  const received = [];
  const done = () => [...expected.keys()].every(k => received.some(x => x.key === k)) &&
    received.filter(x => x.key === retryKey).length >= 2;
  let resolveAll;
  const allReceived = new Promise(resolve => { resolveAll = resolve; });

  const consumer = new Consumer({
    ...common,
    consumerGroup: group,
    consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET',
  });
  consumer.on('error', err => emit({ event: 'error', where: 'consumer', message: err.message }));
  consumer.subscribe(topic, filter, async msg => {
    const r = {
      event: 'received',
      key: msg.keys,
      tag: msg.tags,
      body: msg.body.toString(),
      msgId: msg.msgId,
      storeTimestamp: Number(msg.storeTimestamp),
      receivedAt: Date.now(),
      reconsumeTimes: msg.reconsumeTimes,
      timerDeliverMs: msg.properties.TIMER_DELIVER_MS ? Number(msg.properties.TIMER_DELIVER_MS) : undefined,
    };
    const retry = r.key === retryKey && !received.some(x => x.key === retryKey);
    r.action = retry ? 'retry' : 'ack';
    received.push(r);
    emit(r);
    if (done()) {
      resolveAll();
    }
    return retry ? Consumer.ACTION_RETRY : undefined;
  });
  await consumer.ready();

  for (let i = 0; i < count; i++) {
    for (const tag of allTags) {
      const key = `${topic}-${tag}-${i}`;
      await send(producer, tag, `body of ${key}`, key);
    }
  }

  // A timer message: due timerDelay ms from now, tagged so the filter passes it.
  const dueMs = Date.now() + timerDelay;
  const timerMsg = new Message(topic, 'TagA', `timer due at ${dueMs}`);
  timerMsg.keys = [ timerKey ];
  // Apache RocketMQ 5's timer property. (ali-ons' setStartDeliverTime writes
  // Aliyun's __STARTDELIVERTIME, which Apache RocketMQ does not read.)
  timerMsg.properties.TIMER_DELIVER_MS = String(dueMs);
  await sendMessage(producer, timerMsg, { key: timerKey, tag: 'TagA', dueMs });

  const timedOut = await Promise.race([
    allReceived.then(() => false),
    sleep(deadlineMs).then(() => true),
  ]);
  // Anything that should not arrive (TagC) would come before the last
  // expected message of its queue; a short grace catches stragglers.
  await sleep(500);

  const failures = [];
  if (timedOut) {
    const missing = [...expected.keys()].filter(k => !received.some(x => x.key === k));
    failures.push(`timed out after ${deadlineMs} ms; missing ${missing.join(', ')}`);
  }
  for (const r of received) {
    if (!wantedTags.includes(r.tag)) {
      failures.push(`received ${r.key} with tag ${r.tag}, not in filter ${filter}`);
    }
  }
  const timer = received.find(r => r.key === timerKey);
  if (timer && timer.receivedAt < dueMs) {
    failures.push(`timer message arrived ${dueMs - timer.receivedAt} ms early`);
  }
  const retries = received.filter(r => r.key === retryKey);
  if (retries.length < 2) {
    failures.push(`${retryKey} was delivered ${retries.length} times, want 2 (first answered ACTION_RETRY)`);
  } else if (retries[1].reconsumeTimes < 1 || retries[1].receivedAt < retries[0].receivedAt + 10000) {
    failures.push(`${retryKey} came back with reconsumeTimes ${retries[1].reconsumeTimes} after ` +
      `${retries[1].receivedAt - retries[0].receivedAt} ms; want >= 1 and >= 10000 ms (delay level 3)`);
  }
  const counts = new Map();
  for (const r of received) {
    counts.set(r.key, (counts.get(r.key) || 0) + 1);
  }
  for (const [ key, n ] of counts) {
    if (n > (key === retryKey ? 2 : 1)) {
      failures.push(`${key} delivered ${n} times`);
    }
  }
  emit({ event: 'result', ok: failures.length === 0, failures, expected: expected.size, received: received.length });

  await Promise.race([ Promise.all([ consumer.close(), producer.close() ]), sleep(5000) ]);
  return failures.length === 0;
}

// createTopic sends UPDATE_AND_CREATE_TOPIC to the broker that serves
// TBW102, with the header as a Node.js client writes it (numbers and
// booleans as JSON numbers and booleans), and waits until the name server
// has a route for the topic. ali-ons itself does not create topics: a
// TOPIC_NOT_EXIST route answer makes send() throw instead of falling back to
// TBW102 as the Java client does.
async function createTopic() {
  const api = new MQClientAPI({ httpclient, nameSrv, logger });
  await api.ready();
  try {
    const route = await api.getDefaultTopicRouteInfoFromNameServer('TBW102', 3000);
    const brokerAddr = route.brokerDatas[0].brokerAddrs['0'];
    const request = RemotingCommand.createRequestCommand(RequestCode.UPDATE_AND_CREATE_TOPIC, {
      topic,
      defaultTopic: 'TBW102',
      readQueueNums: 4,
      writeQueueNums: 4,
      perm: 6,
      topicFilterType: 'SINGLE_TAG',
      topicSysFlag: 0,
      order: false,
    });
    const response = await api.invoke(brokerAddr, request, 5000);
    emit({ event: 'topic', topic, broker: brokerAddr, code: response.code, remark: response.remark });
    if (response.code !== 0) {
      throw new Error(`UPDATE_AND_CREATE_TOPIC ${topic}: code ${response.code} ${response.remark}`);
    }
    for (let i = 0; ; i++) {
      try {
        await api.getTopicRouteInfoFromNameServer(topic, 3000);
        return;
      } catch (err) {
        if (i >= 100) {
          throw new Error(`no route for ${topic} 10 s after creating it: ${err.message}`);
        }
        await sleep(100);
      }
    }
  } finally {
    await api.close();
  }
}

async function send(producer, tag, body, key) {
  const msg = new Message(topic, tag, body);
  msg.keys = [ key ];
  return sendMessage(producer, msg, { key, tag });
}

async function sendMessage(producer, msg, info) {
  const res = await producer.send(msg);
  emit({ event: 'sent', ...info, status: res.sendStatus, msgId: res.msgId, queueId: res.messageQueue && res.messageQueue.queueId });
  if (res.sendStatus !== 'SEND_OK') {
    throw new Error(`send of ${info.key}: status ${res.sendStatus}`);
  }
  return res;
}

function sleep(ms) {
  return new Promise(resolve => setTimeout(resolve, ms));
}

const hardStop = setTimeout(() => {
  emit({ event: 'result', ok: false, failures: [ `hard deadline ${deadlineMs + 15000} ms passed` ] });
  process.exit(1);
}, deadlineMs + 15000);
hardStop.unref();

main().then(ok => process.exit(ok ? 0 : 1), err => {
  emit({ event: 'result', ok: false, failures: [ `${err.name}: ${err.message}` ] });
  process.exit(1);
});
