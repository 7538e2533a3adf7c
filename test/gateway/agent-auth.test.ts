import { AgentAuthenticator, type BearerKind, type Identified } from '../../gateway/src/agent-auth';

/**
 * The listener's memory of who a bearer is: asked of the grant broker once however many requests
 * arrive together, asked again off the request's path before it runs out, never kept past its
 * time, and dropped at once when the broker now refuses the token.
 */
const YES: Identified = { ok: true, bearer: { agentId: 'agt_1', grantId: 'grt_1', rootId: 'grt_1' } };

function kindAnswering(answers: Identified[]) {
  const waiting: Array<() => void> = [];
  let asked = 0;
  const kind: BearerKind = {
    recognizes: (token) => token.startsWith('art_'),
    identify: () => {
      asked += 1;
      const answer = answers.shift() ?? YES;
      return new Promise((resolve) => waiting.push(() => resolve(answer)));
    },
  };
  const answerAll = async () => {
    for (const answer of waiting.splice(0)) answer();
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { kind, asked: () => asked, answerAll };
}

it('asks the grant broker once for a burst of requests with the same token and grant', async () => {
  const { kind, asked, answerAll } = kindAnswering([]);
  const authenticator = new AgentAuthenticator([kind], { rememberMs: 1000, maxRemembered: 10 });
  const burst = [1, 2, 3].map(() => authenticator.identify('art_a', 'grt_1', 0));
  await answerAll();
  expect(await Promise.all(burst)).toEqual([YES, YES, YES]);
  expect(asked()).toBe(1);
  // Another grant is another question.
  const other = authenticator.identify('art_a', 'grt_2', 0);
  await answerAll();
  await other;
  expect(asked()).toBe(2);
});

it('answers from memory while it asks again near the end, and never past the end', async () => {
  const { kind, asked, answerAll } = kindAnswering([]);
  const authenticator = new AgentAuthenticator([kind], { rememberMs: 1000, maxRemembered: 10 });
  const first = authenticator.identify('art_a', 'grt_1', 0);
  await answerAll();
  await first;
  // Early in its time: remembered, nothing asked.
  expect(await authenticator.identify('art_a', 'grt_1', 500)).toEqual(YES);
  expect(asked()).toBe(1);
  // In its last quarter: answered at once (the broker has not answered yet), asked once in the background.
  expect(await authenticator.identify('art_a', 'grt_1', 800)).toEqual(YES);
  expect(await authenticator.identify('art_a', 'grt_1', 850)).toEqual(YES);
  expect(asked()).toBe(2);
  await answerAll();
  // Renewed from when it was asked (800): still good at 1500, which the first answer was not.
  expect(await authenticator.identify('art_a', 'grt_1', 1500)).toEqual(YES);
  expect(asked()).toBe(2);
  // Past its time, a request waits for the broker again.
  let settled = false;
  const late = authenticator.identify('art_a', 'grt_1', 1900).then((answer) => ((settled = true), answer));
  await new Promise((resolve) => setImmediate(resolve));
  expect(settled).toBe(false);
  await answerAll();
  expect(await late).toEqual(YES);
});

it('drops a remembered token the broker now refuses, and refuses its next request', async () => {
  const { kind, answerAll } = kindAnswering([YES, { ok: false, refusal: 'bad_token' }, { ok: false, refusal: 'bad_token' }]);
  const authenticator = new AgentAuthenticator([kind], { rememberMs: 1000, maxRemembered: 10 });
  const first = authenticator.identify('art_a', 'grt_1', 0);
  await answerAll();
  expect(await first).toEqual(YES);
  // The background question near the end is refused: the yes is forgotten at once.
  expect(await authenticator.identify('art_a', 'grt_1', 800)).toEqual(YES);
  await answerAll();
  const next = authenticator.identify('art_a', 'grt_1', 810);
  await answerAll();
  expect(await next).toEqual({ ok: false, refusal: 'bad_token' });
});

it('does not let an answer asked before `forget` bring the token back', async () => {
  const { kind, asked, answerAll } = kindAnswering([]);
  const authenticator = new AgentAuthenticator([kind], { rememberMs: 1000, maxRemembered: 10 });
  const first = authenticator.identify('art_a', 'grt_1', 0);
  await answerAll();
  await first;
  await authenticator.identify('art_a', 'grt_1', 800);
  authenticator.forget('art_a', 'grt_1');
  await answerAll();
  // The background answer came after the forget: not remembered, so this request asks afresh.
  const again = authenticator.identify('art_a', 'grt_1', 810);
  expect(asked()).toBe(3);
  await answerAll();
  expect(await again).toEqual(YES);
});
