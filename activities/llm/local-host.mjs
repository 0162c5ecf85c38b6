// The process that runs a local GGUF model for the `local:` LLM provider (activities/llm/local.ts).
//
// Why a separate ES module process: node-llama-cpp is ESM-only while the worker is CommonJS (and jest runs
// it inside a vm where a native `import()` is unavailable); a child process also keeps llama.cpp's threads
// and memory, and any crash, away from the Temporal worker. The model is loaded once and serves every call.
//
// Protocol (IPC messages, JSON):
//   parent → host: { type: 'init', modelPath, runtimeDir, threads, contextSize }
//                  { type: 'generate', id, history, schema, maxTokens }   { type: 'abort', id }
//   host → parent: { type: 'ready', contextSize, threads }   { type: 'fatal', message }
//                  { type: 'progress', id, outputTokens }
//                  { type: 'result', id, text, inputTokens, outputTokens, stopReason, ms }
//                  { type: 'error', id, message, aborted }
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const GRAMMAR_CACHE = 8;

let runtime; // { llama, model, chat, mod }
const grammars = new Map(); // JSON schema text → grammar, most recent last
const aborts = new Map(); // request id → AbortController
let queue = Promise.resolve(); // one generation at a time: the model has one context sequence

const send = (msg) => {
  if (process.connected) process.send(msg);
};

async function load({ modelPath, runtimeDir, threads, contextSize }) {
  // Resolve node-llama-cpp from the runtime folder setup.sh installed (.tools/llama), not from here.
  const entry = createRequire(path.join(runtimeDir, 'package.json')).resolve('node-llama-cpp');
  const mod = await import(pathToFileURL(entry).href);
  const llama = await mod.getLlama({
    gpu: false, // the prebuilt CPU binary only: never build, never download
    build: 'never',
    usePrebuiltBinaries: true,
    skipDownload: true,
    progressLogs: false,
    logLevel: mod.LlamaLogLevel.error,
    maxThreads: threads,
  });
  const model = await llama.loadModel({ modelPath });
  const context = await model.createContext({ contextSize: Math.min(contextSize, model.trainContextSize), threads });
  const chat = new mod.LlamaChat({ contextSequence: context.getSequence() });
  runtime = { llama, model, chat, mod, contextSize: context.contextSize };
}

async function grammarFor(schema) {
  const key = JSON.stringify(schema);
  let grammar = grammars.get(key);
  if (grammar) grammars.delete(key);
  else grammar = await runtime.llama.createGrammarForJsonSchema(schema);
  grammars.set(key, grammar);
  if (grammars.size > GRAMMAR_CACHE) grammars.delete(grammars.keys().next().value);
  return grammar;
}

async function generate({ id, history, schema, maxTokens }) {
  const controller = aborts.get(id);
  if (!controller || controller.signal.aborted)
    return void send({ type: 'error', id, message: 'aborted', aborted: true });
  const started = Date.now();
  const { chat, model } = runtime;
  try {
    const grammar = await grammarFor(schema);
    // The prompt as the model's own chat template renders it, counted with the model's tokenizer.
    const { contextText } = chat.chatWrapper.generateContextState({ chatHistory: history });
    const inputTokens = contextText.tokenize(model.tokenizer).length;
    let outputTokens = 0;
    let lastReport = 0;
    const res = await chat.generateResponse(history, {
      grammar,
      maxTokens,
      signal: controller.signal,
      onToken(tokens) {
        outputTokens += tokens.length;
        if (Date.now() - lastReport >= 250) {
          lastReport = Date.now();
          send({ type: 'progress', id, outputTokens });
        }
      },
    });
    send({
      type: 'result',
      id,
      text: res.response,
      inputTokens,
      outputTokens,
      stopReason: res.metadata.stopReason,
      ms: Date.now() - started,
    });
  } catch (err) {
    send({
      type: 'error',
      id,
      message: err instanceof Error ? err.message : String(err),
      aborted: controller.signal.aborted,
    });
  } finally {
    aborts.delete(id);
  }
}

process.on('message', (msg) => {
  switch (msg?.type) {
    case 'init':
      load(msg).then(
        () => send({ type: 'ready', contextSize: runtime.contextSize, threads: msg.threads }),
        (err) => {
          send({ type: 'fatal', message: err instanceof Error ? err.message : String(err) });
          setTimeout(() => process.exit(1), 50);
        },
      );
      break;
    case 'generate':
      aborts.set(msg.id, new AbortController());
      queue = queue.then(() => generate(msg));
      break;
    case 'abort':
      aborts.get(msg.id)?.abort();
      break;
  }
});

// The worker went away (exit, crash, kill): nothing is left to serve.
process.on('disconnect', () => process.exit(0));
