// Regenerate expected.json (Node >= 20; versions pinned in package.json / package-lock.json):
//
//   cd tests/testdata/mastra_evals && npm ci && node generate.mjs
//
// Runs Mastra's real code-based scorers (@mastra/evals) on a fixed corpus of agent runs and
// writes every run, the scorer and options used, and Mastra's score, step results or error to
// expected.json. scorecar's tests (tests/scorers/builtin/) read that file; CI never runs Node.
// Options are written with scorecar's Python keyword names and translated here.

import { readFileSync, writeFileSync } from 'node:fs';
import nlp from 'compromise';
import {
  createCompletenessScorer,
  createContentSimilarityScorer,
  createKeywordCoverageScorer,
  createTextualDifferenceScorer,
  createToneScorer,
  createToolCallAccuracyScorerCode,
} from '@mastra/evals/scorers/prebuilt';
import { checks } from '@mastra/evals/checks';

const CREATED_AT = '2026-01-01T00:00:00.000Z';
let nextId = 0;

/** A MastraDBMessage holding one text (content.content and one text part). */
function msg(role, text, extra = {}) {
  nextId += 1;
  const content = { format: 2, parts: [{ type: 'text', text }], content: text, ...extra };
  return { id: `m${nextId}`, role, createdAt: CREATED_AT, content };
}

/** A MastraDBMessage with the given content object as is. */
function rawMsg(role, content) {
  nextId += 1;
  return { id: `m${nextId}`, role, createdAt: CREATED_AT, content: { format: 2, ...content } };
}

function inv(toolName, state = 'result', extra = {}) {
  nextId += 1;
  const base = { state, toolCallId: extra.toolCallId ?? `call_${nextId}`, toolName, args: { q: 'x' } };
  if (state === 'result') base.result = { ok: true };
  return { ...base, ...extra };
}

/** An assistant message whose parts are the given tool invocations, then a final text. */
function toolMsg(invocations, text = 'Done.', legacy = undefined) {
  const parts = invocations.map((toolInvocation) => ({ type: 'tool-invocation', toolInvocation }));
  parts.push({ type: 'text', text });
  const content = { parts, content: text };
  if (legacy) content.toolInvocations = legacy;
  return rawMsg('assistant', content);
}

function agentRun(inputMessages, output) {
  return {
    input: { inputMessages, rememberedMessages: [], systemMessages: [], taggedSystemMessages: {} },
    output,
  };
}

function textRun(input, output) {
  const inputs = Array.isArray(input) ? input.map((t) => msg('user', t)) : [msg('user', input)];
  const outputs = Array.isArray(output) ? output.map((t) => msg('assistant', t)) : [msg('assistant', output)];
  return agentRun(inputs, outputs);
}

// ---------------------------------------------------------------- corpus: text pairs

// Edge cases of JavaScript string semantics: empty and one-character strings, case, the
// JavaScript whitespace set (NBSP, BOM, U+2028 are whitespace; NEL U+0085 and U+001C are not),
// non-BMP characters (UTF-16 surrogate pairs), combining marks, punctuation, HTML, digits.
const EDGE_PAIRS = [
  ['', ''],
  ['', 'Hello there.'],
  ['Hello there.', ''],
  ['a', 'a'],
  ['a', 'b'],
  ['a', 'ab'],
  ['A', 'a'],
  ['ab', 'ba'],
  [' ', '  '],
  ['night', 'nacht'],
  ['Night', 'NACHT'],
  ['Hello   World', 'hello world'],
  ['Hello\t\n World  ', 'Hello World'],
  ['tab\tseparated\twords', 'tab separated words'],
  ['non\u00a0breaking space', 'non breaking space'],
  ['\ufeffbyte order mark', 'byte order mark'],
  ['line\u2028separator here', 'line separator here'],
  ['next\u0085line char', 'next line char'],
  ['file\u001cseparator', 'file separator'],
  ['ideographic\u3000space', 'ideographic space'],
  ['😀', '😀'],
  ['😀😃', '😀😄'],
  ['I love it 😀 great 👍', 'I love it great'],
  ['𝒳𝒴𝒵 math letters', '𝒳𝒴 math letters'],
  ['café naïve résumé', 'cafe naive resume'],
  ['cafe\u0301', 'café'],
  ['!!!', '...'],
  ['Hello, world!', 'Hello world'],
  ['<b>Bold</b> claim about <i>cats</i>', 'bold claim about cats'],
  ['Visit https://Example.com/Path?x=1 now', 'visit https://example.com/path?x=1 now'],
  ['123 456 7.5 room 101', 'room 101 has 456 seats'],
  ['Straße und Fluss', 'STRASSE UND FLUSS'],
  ['İstanbul is big', 'istanbul is big'],
  ['ΟΔΟΣ ΟΔΟΣ', 'οδος οδος'],
  ["'quoted' \"words\" (paren) [bracket] {brace}", 'quoted words paren bracket brace'],
  ['_ @ & # a_b @me', 'a_b me'],
  ['mixed CamelCase wordsLikeThis', 'mixed camel case words like this'],
  ['e.g. U.S.A. well-known state-of-the-art', 'for example the usa is well known'],
  ['aaaaaaaaaa', 'aaaaa'],
  ['abcabcabc', 'cbacbacba'],
];

const SENTIMENT_TEXTS = [
  'I love this product. It is amazing!',
  'This is terrible. I hate it.',
  'I love it. I hate it! It is okay?',
  'not good',
  "I can't stand this, it's not bad though.",
  'constructor good',
  '__proto__ bad',
  'good\tbad',
  'great 😀 👍',
  'Thanks! Happy to help. Sorry for the trouble.',
  'No sentence punctuation at all just words',
  'Wow... really?! Excellent work, well done.',
  'The weather is sunny and warm today.',
  'Error: the request failed. Please try again later.',
  '',
  '...',
  'Good. Bad. Good. Bad. Good.',
];

// Realistic agent conversations: questions with full, partial and off-topic answers. These are
// what completeness's MAE (compromise's tagger vs scorecar's) is measured on.
const QA = [
  ['What is the capital of France?', 'The capital of France is Paris.'],
  ['What is the capital of France?', 'Paris.'],
  ['How do I reset my password?', 'To reset your password, open Settings, choose Security, and click "Reset password". We will email you a link that expires in 24 hours.'],
  ['How do I reset my password?', 'Go to settings and click the reset button.'],
  ['Can you tell me the weather in Berlin tomorrow?', 'Tomorrow in Berlin it will be cloudy with a high of 14°C and light rain in the evening.'],
  ['Why is my order delayed?', 'Your order was delayed because the warehouse ran out of stock. It has been restocked and will ship on Monday.'],
  ['Write a Python function that reverses a string.', 'Here is a function:\n\ndef reverse(s):\n    return s[::-1]\n\nIt uses slicing with a negative step.'],
  ['Explain how photosynthesis works in simple terms.', 'Plants take in sunlight, water and carbon dioxide and turn them into sugar and oxygen. The green pigment chlorophyll captures the light energy.'],
  ['Explain how photosynthesis works in simple terms.', 'It is how plants make food.'],
  ['Summarize the meeting notes: we agreed to launch the new dashboard in March, Maria will own the rollout, and the budget was approved.', 'The team agreed to launch the new dashboard in March; Maria owns the rollout and the budget is approved.'],
  ['Summarize the meeting notes: we agreed to launch the new dashboard in March, Maria will own the rollout, and the budget was approved.', 'The dashboard launches in March.'],
  ['I was charged twice for my subscription last month. Can you refund the duplicate payment?', 'I am sorry about the double charge. I have refunded the duplicate payment of $12.99; it should appear on your statement within 5 business days.'],
  ['Which planets in our solar system have rings?', 'Saturn, Jupiter, Uranus and Neptune all have ring systems, although Saturn\'s rings are by far the most visible.'],
  ['Translate "good morning" into Spanish and German.', 'In Spanish it is "buenos días" and in German it is "guten Morgen".'],
  ['What are the side effects of ibuprofen?', 'Common side effects include stomach upset, heartburn, nausea and dizziness. Long-term use can raise the risk of ulcers and kidney problems.'],
  ['Book a table for two at an Italian restaurant near Union Square tonight at 7pm.', 'I booked a table for two at Trattoria Roma near Union Square for 7:00 pm tonight. Your confirmation number is TR-4821.'],
  ['Book a table for two at an Italian restaurant near Union Square tonight at 7pm.', 'Sorry, I could not find any availability.'],
  ['How many employees does the company have, and where are the offices located?', 'The company has about 1,200 employees, with offices in London, Singapore and Austin.'],
  ['Compare PostgreSQL and MySQL for a write-heavy workload.', 'PostgreSQL handles concurrent writes well thanks to MVCC and offers richer indexing, while MySQL with InnoDB is simpler to operate and very fast for simple primary-key writes. For complex write-heavy workloads PostgreSQL is usually the safer choice.'],
  ['What time does the pharmacy close on Sundays?', 'The pharmacy closes at 5 pm on Sundays.'],
  ['Did the deployment to production succeed?', 'Yes, the deployment finished successfully at 14:32 UTC and all health checks are passing.'],
  ['Did the deployment to production succeed?', 'The build is still running.'],
  ['Please list three healthy breakfast ideas.', 'Oatmeal with berries, Greek yogurt with nuts, and whole-grain toast with avocado and eggs.'],
  ['Who wrote Pride and Prejudice and when was it published?', 'Jane Austen wrote Pride and Prejudice; it was published in 1813.'],
  ['My laptop keeps overheating when I play games. What should I do?', 'Clean the fans and vents, use the laptop on a hard surface, lower the graphics settings and consider a cooling pad. If it still overheats, the thermal paste may need replacing.'],
  ['What is the difference between a list and a tuple in Python?', 'Lists are mutable, so you can change their contents, while tuples are immutable. Tuples are slightly faster and can be used as dictionary keys.'],
  ['Can I bring my dog on the train?', 'Small dogs are allowed on the train if they stay in a carrier; larger dogs need a ticket and must be on a leash.'],
  ['Cancel my gym membership starting next month.', 'Your gym membership has been cancelled effective next month. You can keep using the gym until the end of this billing period.'],
  ['What were the main causes of the First World War?', 'Historians usually point to militarism, alliances, imperialism and nationalism, with the assassination of Archduke Franz Ferdinand as the immediate trigger.'],
  ['How long should I boil an egg for a soft yolk?', 'Boil it for about six minutes, then cool it in cold water.'],
  ['Is it going to snow in Denver this weekend?', 'The forecast shows snow on Saturday night in Denver, with 2 to 4 inches expected, and clear skies on Sunday.'],
  ['Find me the cheapest flight from Boston to Chicago next Friday.', 'The cheapest option is a United flight departing Boston at 6:15 am next Friday and arriving in Chicago at 8:05 am, for $129.'],
  ['Why does my React component render twice?', 'In development, React StrictMode intentionally renders components twice to help find side effects. It does not happen in production builds.'],
  ['What does HTTP status 429 mean and how should a client handle it?', 'HTTP 429 means Too Many Requests: the client is being rate limited. It should wait, honouring the Retry-After header if present, and retry with exponential backoff.'],
  ['Tell me a fun fact about octopuses.', 'Octopuses have three hearts and blue blood.'],
  ['Tell me a fun fact about octopuses.', 'The weather today is sunny.'],
  ['How do I change the oil in my car?', 'Warm up the engine, drain the old oil from the drain plug, replace the oil filter, refill with the recommended oil and check the level with the dipstick.'],
  ['Recommend a good science fiction novel for a teenager.', 'Try "Ender\'s Game" by Orson Scott Card: it is fast-paced, thoughtful and popular with teenage readers.'],
  ['Which vaccines do I need before travelling to Kenya?', 'Yellow fever vaccination is recommended, and you should be up to date on routine vaccines; hepatitis A and typhoid are also commonly advised. Check with a travel clinic.'],
  ['We need to migrate the billing service to the new cluster before Thursday. What are the risks?', 'The main risks are downtime during the database cutover, configuration drift between clusters, and missing secrets. Run a rehearsal migration and keep a rollback plan ready.'],
  ['hi', 'Hello! How can I help you today?'],
  ['thanks, that worked!', 'Great, glad it worked. Anything else?'],
  ['I\'m looking for running shoes that are good for flat feet.', 'Stability running shoes such as the Brooks Adrenaline or ASICS Gel-Kayano support flat feet well.'],
  ['They said the package was delivered but I haven\'t received it.', 'I\'m sorry. The courier marked it delivered yesterday at 3 pm; I have opened an investigation and will update you within 48 hours.'],
];

// A second set of conversations, written after the completeness rules were tuned on QA:
// the held-out check that the rules generalise (agent-style answers, lists, markdown).
const QA_HOLDOUT = [
  ['Can you check whether my flight UA 455 is on time?', 'Flight UA 455 is currently delayed by 35 minutes. It is now expected to depart at 10:25 from gate B12.'],
  ['What are the store hours on public holidays?', 'On public holidays the store opens at 10 am and closes at 4 pm. Some locations may be closed, so please check your local store page.'],
  ['I forgot which plan I am on. Could you look it up?', 'You are on the Pro plan, billed annually. It renews on 3 March and includes 5 seats.'],
  ['Give me a summary of the quarterly sales report.', '**Summary**\n- Revenue grew 12% quarter over quarter.\n- The EMEA region led growth, driven by new enterprise deals.\n- Churn fell to 2.1%.\n- Marketing spend was slightly above budget.'],
  ['Give me a summary of the quarterly sales report.', 'Sales went up.'],
  ['How do I undo the last commit in git but keep my changes?', 'Run `git reset --soft HEAD~1`. It moves the branch back one commit and keeps your changes staged.'],
  ['Why did my payment fail?', 'Your bank declined the payment because the card has expired. Please update your card details and try again.'],
  ['What is the best way to learn a new language quickly?', 'Practise every day, focus on the most common words first, speak with native speakers as early as possible and use spaced-repetition flashcards.'],
  ['Which files were changed in the last pull request?', 'The last pull request changed three files: src/api/routes.ts, src/api/handlers.ts and the README.'],
  ['Is the museum wheelchair accessible?', 'Yes. All galleries are step-free, there are lifts to every floor and wheelchairs can be borrowed at the entrance free of charge.'],
  ['Draft a short apology email to a customer whose order arrived damaged.', 'Subject: We are sorry about your order\n\nDear customer,\n\nWe are very sorry that your order arrived damaged. We have shipped a replacement today at no cost, and you do not need to return the damaged item.\n\nKind regards,\nThe Support Team'],
  ['How much does it cost to ship a parcel to Canada?', 'Standard shipping to Canada costs $18 for parcels up to 2 kg and takes 5 to 8 business days. Express shipping costs $42 and takes 2 to 3 days.'],
  ['When was the last time the server was restarted?', 'The server was last restarted on Tuesday at 02:14 UTC during scheduled maintenance.'],
  ['Explain what a vector database is.', 'A vector database stores embeddings, which are lists of numbers that represent the meaning of text or images, and finds the items closest to a query embedding. It is often used for semantic search and retrieval-augmented generation.'],
  ['My child has a fever of 39 degrees. What should I do?', 'Keep your child hydrated, let them rest and give a children\'s fever reducer at the dose on the label. Call your doctor if the fever lasts more than three days, or seek urgent care if your child has trouble breathing or seems very drowsy.'],
  ['Who won the match last night?', 'I do not have live sports results, so I cannot tell you who won last night. A sports news site will have the latest scores.'],
  ['Set a reminder to call the dentist tomorrow at 9.', 'Done. I set a reminder to call the dentist tomorrow at 9:00 am.'],
  ['What does the error "connection refused" mean?', 'It means nothing was listening on the address and port you tried to reach, or a firewall rejected the connection. Check that the service is running and that you are using the right port.'],
  ['How many calories are in a banana?', 'A medium banana has about 105 calories.'],
  ['Can you recommend a laptop for video editing under $1500?', 'Consider a laptop with at least 16 GB of RAM, a recent 8-core processor and a dedicated graphics card, such as an ASUS ProArt or a MacBook Air with the M3 chip. Both handle 4K editing well within your budget.'],
  ['Where is my refund?', 'Your refund of $54.20 was issued on Friday. Banks usually take 3 to 5 business days to post it to your account.'],
  ['Write a haiku about autumn.', 'Crisp leaves drift and fall\nGolden light on quiet paths\nThe year exhales slow'],
  ['Why are the tests failing on the main branch?', 'The tests fail because a recent change renamed the config loader, and two test files still import the old name. Updating those imports fixes the build.'],
  ['Tell me about the return policy.', 'You can return most items within 30 days of delivery for a full refund, as long as they are unused and in the original packaging.'],
  ['What should I pack for a week of hiking in Scotland?', 'Pack waterproof boots, a rain jacket and trousers, warm layers, a hat and gloves, midge repellent, a map and compass, and enough food and water for each day.'],
];

// ---------------------------------------------------------------- corpus: tool calls

function toolOutputs() {
  const outs = {};
  outs.no_tools = [msg('assistant', 'I can answer that without tools.')];
  outs.one_weather = [toolMsg([inv('get_weather')], 'It is sunny.')];
  outs.two_in_order = [toolMsg([inv('search'), inv('summarize')], 'Summary.')];
  outs.reverse_order = [toolMsg([inv('summarize'), inv('search')], 'Summary.')];
  outs.repeated = [toolMsg([inv('search'), inv('search'), inv('summarize')], 'Summary.')];
  outs.interleaved = [toolMsg([inv('search'), inv('fetch'), inv('summarize'), inv('respond')], 'Answer.')];
  outs.search_summarize_search = [toolMsg([inv('search'), inv('summarize'), inv('search')], 'Ok.')];
  outs.output_error = [toolMsg([inv('save', 'output-error', { errorText: 'Save failed' })], 'Sorry.')];
  outs.call_only = [toolMsg([inv('get_weather', 'call')], '')];
  outs.partial_call = [toolMsg([inv('get_weather', 'partial-call')], 'Hmm.')];
  outs.is_error = [toolMsg([inv('lookup', 'result', { isError: true, result: 'not found' })], 'No.')];
  outs.result_error = [toolMsg([inv('lookup', 'result', { result: { error: 'boom' } })], 'No.')];
  outs.result_error_empty = [toolMsg([inv('lookup', 'result', { result: { error: '' } })], 'Ok.')];
  outs.result_error_list = [toolMsg([inv('lookup', 'result', { result: { error: [] } })], 'Ok.')];
  outs.result_error_zero = [toolMsg([inv('lookup', 'result', { result: { error: 0 } })], 'Ok.')];
  outs.result_error_obj = [toolMsg([inv('lookup', 'result', { result: { error: {} } })], 'Ok.')];
  outs.result_string = [toolMsg([inv('lookup', 'result', { result: 'error' })], 'Ok.')];
  outs.two_messages = [
    toolMsg([inv('search')], 'Let me look that up.'),
    toolMsg([inv('get_weather'), inv('search')], 'Here you go.'),
  ];
  outs.empty_tool_name = [toolMsg([inv('')], 'Ok.')];
  // Legacy content.toolInvocations merged with parts: parts win on a shared id, legacy-only
  // calls are kept in their legacy position.
  const shared = inv('search', 'result', { toolCallId: 'shared_1' });
  outs.legacy_merge = [toolMsg(
    [shared, inv('summarize')],
    'Merged.',
    [inv('fetch', 'result', { toolCallId: 'legacy_1' }), { ...shared, toolName: 'search_legacy' },
      inv('respond', 'result', { toolCallId: 'legacy_2' })],
  )];
  outs.legacy_only = [rawMsg('assistant', {
    parts: [{ type: 'text', text: 'Legacy.' }], content: 'Legacy.',
    toolInvocations: [inv('get_weather'), inv('search', 'call')],
  })];
  outs.user_message_in_output = [
    msg('user', 'follow-up'),
    toolMsg([inv('get_weather')], 'Sunny again.'),
  ];
  outs.empty = [];
  return outs;
}

// ---------------------------------------------------------------- scorers

function makeScorer(name, options) {
  const o = options ?? {};
  switch (name) {
    case 'completeness':
      return createCompletenessScorer();
    case 'content_similarity':
      return Object.keys(o).length === 0
        ? createContentSimilarityScorer()
        : createContentSimilarityScorer({ ignoreCase: o.ignore_case, ignoreWhitespace: o.ignore_whitespace });
    case 'keyword_coverage':
      return createKeywordCoverageScorer();
    case 'textual_difference':
      return createTextualDifferenceScorer();
    case 'tone':
      return createToneScorer({ referenceTone: o.reference_tone });
    case 'tool_call_accuracy':
      return createToolCallAccuracyScorerCode({
        expectedTool: o.expected_tool,
        strictMode: o.strict_mode,
        expectedToolOrder: o.expected_tool_order,
      });
    case 'checks.includes':
      return checks.includes(o.expected, o.ignore_case === undefined ? {} : { ignoreCase: o.ignore_case });
    case 'checks.excludes':
      return checks.excludes(o.unwanted, o.ignore_case === undefined ? {} : { ignoreCase: o.ignore_case });
    case 'checks.equals':
      return checks.equals(o.expected, o.ignore_case === undefined ? {} : { ignoreCase: o.ignore_case });
    case 'checks.matches':
      return checks.matches(new RegExp(o.pattern, o.flags ?? ''), { exact: o.exact ?? false });
    case 'checks.similarity':
      return checks.similarity(o.expected, {
        ...(o.ignore_case === undefined ? {} : { ignoreCase: o.ignore_case }),
        ...(o.threshold === undefined ? {} : { threshold: o.threshold }),
      });
    case 'checks.called_tool':
      return checks.calledTool(o.tool_name, o.times === undefined ? {} : { times: o.times });
    case 'checks.did_not_call':
      return checks.didNotCall(o.tool_name);
    case 'checks.tool_order':
      return checks.toolOrder(o.expected_order);
    case 'checks.max_tool_calls':
      return checks.maxToolCalls(o.max);
    case 'checks.used_no_tools':
      return checks.usedNoTools();
    case 'checks.no_tool_errors':
      return checks.noToolErrors();
    default:
      throw new Error(`unknown scorer ${name}`);
  }
}

/** JSON-safe copy: Sets become arrays (keyword coverage returns Sets). */
function plain(value) {
  return JSON.parse(JSON.stringify(value, (_k, v) => (v instanceof Set ? [...v] : v)));
}

const cases = [];
const runs = [];
const runIndex = new Map();
async function addCase(group, scorer, options, run) {
  // Runs are stored once in `runs`; a case names its run by index.
  const key = JSON.stringify(run);
  if (!runIndex.has(key)) {
    runIndex.set(key, runs.length);
    runs.push(plain(run));
  }
  const entry = { group, scorer, options: options ?? {}, run: runIndex.get(key) };
  try {
    const result = await makeScorer(scorer, options).run(structuredClone(run));
    entry.score = result.score;
    entry.preprocessStepResult = plain(result.preprocessStepResult ?? null);
    entry.analyzeStepResult = plain(result.analyzeStepResult ?? null);
    entry.error = null;
  } catch (err) {
    entry.score = null;
    entry.error = err?.cause?.message ?? err.message;
  }
  cases.push(entry);
}

const TEXT_SCORERS = [
  ['completeness', {}],
  ['content_similarity', {}],
  ['content_similarity', { ignore_case: false, ignore_whitespace: true }],
  ['content_similarity', { ignore_case: true, ignore_whitespace: false }],
  ['content_similarity', { ignore_case: false, ignore_whitespace: false }],
  ['keyword_coverage', {}],
  ['textual_difference', {}],
  ['tone', {}],
  ['tone', { reference_tone: 'I am very happy and grateful!' }],
];

for (const [a, b] of EDGE_PAIRS) {
  for (const [scorer, options] of TEXT_SCORERS) await addCase('edge', scorer, options, textRun(a, b));
}
for (const [q, a] of QA) {
  for (const [scorer, options] of TEXT_SCORERS) await addCase('qa', scorer, options, textRun(q, a));
}
// Off-topic pairings of the same realistic texts (low coverage is realistic too).
for (let i = 0; i < QA.length; i += 1) {
  const [q] = QA[i];
  const [, a] = QA[(i + 7) % QA.length];
  await addCase('qa_mismatch', 'completeness', {}, textRun(q, a));
  await addCase('qa_mismatch', 'keyword_coverage', {}, textRun(q, a));
}
for (const [q, a] of QA_HOLDOUT) {
  await addCase('qa_holdout', 'completeness', {}, textRun(q, a));
  await addCase('qa_holdout', 'keyword_coverage', {}, textRun(q, a));
  await addCase('qa_holdout', 'content_similarity', {}, textRun(q, a));
  await addCase('qa_holdout', 'textual_difference', {}, textRun(q, a));
  await addCase('qa_holdout', 'tone', {}, textRun(q, a));
}
for (let i = 0; i < QA_HOLDOUT.length; i += 1) {
  await addCase('qa_holdout', 'completeness', {}, textRun(QA_HOLDOUT[i][0], QA[(i * 5) % QA.length][1]));
}
for (const t of SENTIMENT_TEXTS) {
  await addCase('tone', 'tone', {}, textRun('How was it?', t));
  await addCase('tone', 'tone', { reference_tone: 'This is great, thank you!' }, textRun('How was it?', t));
  await addCase('tone', 'tone', { reference_tone: 'not good at all' }, textRun('How was it?', t));
  await addCase('tone', 'tone', { reference_tone: '' }, textRun('How was it?', t));
}

// Several messages: input joined with ", ", all output messages (any role) too.
const multi = [
  textRun(['First question about dogs.', 'Second question about cats?'], ['Dogs bark.', 'Cats meow.']),
  agentRun([msg('user', 'Tell me about the Eiffel Tower.'), msg('system', 'Be brief.')],
    [toolMsg([inv('search')], ''), msg('assistant', 'It is a wrought-iron tower in Paris.')]),
  agentRun([rawMsg('user', { content: '', parts: [{ type: 'text', text: 'first part' }, { type: 'text', text: 'Last part wins' }] })],
    [rawMsg('assistant', { parts: [{ type: 'reasoning', reasoning: 'thinking' }] })]),
  agentRun([rawMsg('user', { text: 'text field question', parts: [{ type: 'text', text: 'ignored part' }] })],
    [rawMsg('assistant', { content: 'content wins', parts: [{ type: 'text', text: 'not this' }] })]),
  agentRun([], [msg('assistant', 'An answer with no question.')]),
  agentRun([msg('user', 'A question with no answer.')], []),
];
for (const run of multi) {
  for (const [scorer, options] of TEXT_SCORERS) await addCase('multi', scorer, options, run);
}

// A long answer (several paragraphs).
const LONG_IN = QA.slice(0, 12).map(([q]) => q).join(' ');
const LONG_OUT = QA.map(([, a]) => a).join('\n\n');
for (const [scorer, options] of TEXT_SCORERS) await addCase('long', scorer, options, textRun(LONG_IN, LONG_OUT));

// Tool calls.
const outs = toolOutputs();
const TOOL_OPTIONS = [
  { expected_tool: 'get_weather' },
  { expected_tool: 'get_weather', strict_mode: true },
  { expected_tool: 'search' },
  { expected_tool: 'search', strict_mode: true },
  { expected_tool_order: ['search', 'summarize'] },
  { expected_tool_order: ['search', 'summarize'], strict_mode: true },
  { expected_tool_order: ['search', 'summarize', 'respond'] },
  { expected_tool: 'search', expected_tool_order: ['summarize', 'search'] },
  { expected_tool: 'get_weather', expected_tool_order: [] },
];
const CHECKS = [
  ['checks.includes', { expected: 'SUNNY' }],
  ['checks.includes', { expected: 'SUNNY', ignore_case: false }],
  ['checks.excludes', { unwanted: 'sorry' }],
  ['checks.excludes', { unwanted: 'Sorry', ignore_case: false }],
  ['checks.equals', { expected: 'it is sunny.' }],
  ['checks.equals', { expected: 'It is sunny.', ignore_case: false }],
  ['checks.matches', { pattern: 'sun+y', flags: '' }],
  ['checks.matches', { pattern: 'SUNNY', flags: 'i' }],
  ['checks.matches', { pattern: 'It is sunny\\.', flags: '', exact: true }],
  ['checks.matches', { pattern: 'sunny|Summary', flags: '', exact: true }],
  ['checks.similarity', { expected: 'It is sunny' }],
  ['checks.similarity', { expected: 'It is sunny', threshold: 0.9 }],
  ['checks.similarity', { expected: 'It is SUNNY', ignore_case: false }],
  ['checks.called_tool', { tool_name: 'search' }],
  ['checks.called_tool', { tool_name: 'search', times: 2 }],
  ['checks.did_not_call', { tool_name: 'get_weather' }],
  ['checks.tool_order', { expected_order: ['search', 'summarize'] }],
  ['checks.tool_order', { expected_order: ['search', 'summarize', 'respond'] }],
  ['checks.tool_order', { expected_order: [] }],
  ['checks.max_tool_calls', { max: 1 }],
  ['checks.max_tool_calls', { max: 0 }],
  ['checks.used_no_tools', {}],
  ['checks.no_tool_errors', {}],
];
for (const [name, output] of Object.entries(outs)) {
  const run = agentRun([msg('user', 'What is the weather? Search and summarize.')], output);
  for (const options of TOOL_OPTIONS) await addCase(`tools:${name}`, 'tool_call_accuracy', options, run);
  for (const [scorer, options] of CHECKS) await addCase(`tools:${name}`, scorer, options, run);
}
await addCase('tools:no_options', 'tool_call_accuracy', {}, agentRun([msg('user', 'q')], outs.one_weather));
await addCase('tools:no_input', 'tool_call_accuracy', { expected_tool: 'search' },
  agentRun([], outs.one_weather));

// Checks on text outputs with several assistant messages (joined with ' ' or '').
const checkRuns = [
  agentRun([msg('user', 'q')], [msg('assistant', 'It is'), msg('assistant', 'sunny.')]),
  agentRun([msg('user', 'q')], [msg('assistant', 'It is sunny.'), msg('user', 'Sorry')]),
  agentRun([msg('user', 'q')], [msg('assistant', 'İt is sunny 😀')]),
  agentRun([msg('user', 'q')], []),
];
for (const run of checkRuns) {
  for (const [scorer, options] of CHECKS.slice(0, 13)) await addCase('checks_text', scorer, options, run);
}

// compromise's own view of the realistic texts (for debugging completeness differences).
const compromiseView = {};
for (const [q, a] of [...QA, ...QA_HOLDOUT]) {
  for (const t of [q, a]) {
    if (compromiseView[t]) continue;
    const doc = nlp(t);
    const nouns = doc.nouns().out('array');
    const verbs = doc.verbs().toInfinitive().out('array');
    compromiseView[t] = { nouns, verbs, topics: doc.topics().out('array'), terms: doc.terms().out('array') };
  }
}

const versions = {};
for (const name of ['@mastra/evals', '@mastra/core', 'compromise', 'keyword-extractor', 'sentiment', 'string-similarity']) {
  versions[name] = JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url))).version;
}
writeFileSync(new URL('./expected.json', import.meta.url),
  `${JSON.stringify({ versions, runs, cases, compromise: compromiseView }, null, 1)}\n`);
console.log(`wrote ${cases.length} cases`);
