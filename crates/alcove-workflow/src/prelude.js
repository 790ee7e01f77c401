// The workflow dialect's globals, defined over the host object alcove gives
// (`__alcove`), which this removes from the global scope. Evaluated once,
// before the script, in a context with no module loader and no host API.
(() => {
  'use strict';
  const host = globalThis.__alcove;
  delete globalThis.__alcove;
  const config = JSON.parse(host.config);
  const evaluate = globalThis.eval;
  delete globalThis.eval;

  const fail = (message) => { throw new Error(message); };
  const unwrap = (reply) => {
    const parsed = JSON.parse(reply);
    if (Object.prototype.hasOwnProperty.call(parsed, 'error')) fail(parsed.error);
    return parsed.value === undefined ? null : parsed.value;
  };
  const describe = (error) => (error && error.message !== undefined ? String(error.message) : String(error));

  const refuse = (what, instead) => () =>
    fail(`${what} is not allowed in a workflow: it would break resume (${instead})`);
  Math.random = refuse('Math.random()', 'vary prompts by index instead');
  const RealDate = Date;
  RealDate.now = refuse('Date.now()', 'pass a time in through args');
  globalThis.Date = new Proxy(RealDate, {
    construct(target, argv, newTarget) {
      if (argv.length === 0) refuse('new Date() without an argument', 'pass a time in through args')();
      return Reflect.construct(target, argv, newTarget);
    },
    apply: refuse('Date()', 'pass a time in through args'),
  });

  const agent = async (prompt, opts) => {
    if (typeof prompt !== 'string') fail('agent(prompt, opts): prompt must be a string');
    const o = opts === undefined || opts === null ? {} : opts;
    if (typeof o !== 'object') fail('agent(prompt, opts): opts must be an object');
    const request = {
      prompt,
      label: o.label === undefined ? undefined : String(o.label),
      phase: o.phase === undefined ? undefined : String(o.phase),
      schema: o.schema,
      model: o.model,
      effort: o.effort,
      isolation: o.isolation,
      agentType: o.agentType,
    };
    return unwrap(await host.agent(JSON.stringify(request)));
  };

  const checkList = (name, list) => {
    if (!Array.isArray(list)) fail(`${name}(): the first argument must be an array`);
    if (list.length > config.maxItems) {
      fail(`${name}(): ${list.length} items, more than the ${config.maxItems} one call takes; split the list`);
    }
  };

  const parallel = async (thunks) => {
    checkList('parallel', thunks);
    return Promise.all(thunks.map(async (thunk, index) => {
      try {
        return await (typeof thunk === 'function' ? thunk() : thunk);
      } catch (error) {
        host.log(`parallel item ${index} threw: ${describe(error)}`);
        return null;
      }
    }));
  };

  const pipeline = async (items, ...stages) => {
    checkList('pipeline', items);
    stages.forEach((stage, n) => {
      if (typeof stage !== 'function') fail(`pipeline(): stage ${n + 1} is not a function`);
    });
    return Promise.all(items.map(async (item, index) => {
      let previous = item;
      try {
        for (const stage of stages) previous = await stage(previous, item, index);
        return previous;
      } catch (error) {
        host.log(`pipeline item ${index} threw: ${describe(error)}`);
        return null;
      }
    }));
  };

  const phase = (title) => { host.phase(String(title)); };
  const log = (...parts) => { host.log(parts.map((p) => (typeof p === 'string' ? p : JSON.stringify(p))).join(' ')); };

  const total = config.budget;
  const budget = Object.freeze({
    total,
    spent: () => host.spent(),
    remaining: () => (total === null ? Infinity : Math.max(0, total - host.spent())),
  });

  const nestedRefused = async () => fail('workflow() nests one level only: a nested workflow cannot start another');
  const workflow = async (nameOrRef, childArgs) => {
    let ref;
    if (typeof nameOrRef === 'string') ref = nameOrRef;
    else if (nameOrRef && typeof nameOrRef.scriptPath === 'string') ref = nameOrRef.scriptPath;
    else fail('workflow(nameOrRef, args): a saved name or { scriptPath }');
    const body = unwrap(host.nested(ref));
    return evaluate(body)(childArgs, nestedRefused);
  };

  // `workflow` is no global: the top-level script gets it as a parameter
  // and a nested one gets `nestedRefused`, so a nested script cannot reach
  // the real one through `globalThis` and nest again.
  Object.assign(globalThis, { agent, parallel, pipeline, phase, log, budget });
  globalThis.__start = (main, argsJson) => {
    delete globalThis.__start;
    const args = argsJson === undefined ? undefined : JSON.parse(argsJson);
    return main(args, workflow).then((value) => {
      const text = value === undefined ? undefined : JSON.stringify(value);
      return text === undefined ? 'null' : text;
    });
  };
})();
