// Every visible string of <site-agent>, and how a string gets its values. The element's own
// `strings` (element.strings = {...}, options.strings) win over these.

/** Every visible string; override any of them with `element.strings = {...}`. */
export const DEFAULT_STRINGS = {
  label: 'Ask this site',
  placeholder: 'What can I do for you?',
  send: 'Send',
  stop: 'Stop',
  close: 'Close',
  you: 'You:',
  assistant: 'Assistant:',
  loading: 'Starting the assistant…',
  queued: 'Your message is sent as soon as the assistant is ready.',
  // Loading, in the visitor's words ({percent}: 0-100, overall).
  'loading.runtime': 'Starting the assistant… {percent} %',
  'loading.packages': 'Starting the assistant… {percent} %',
  'loading.import': 'Starting the assistant… {percent} %',
  'loading.agent': 'Almost ready…',
  loadFailed: 'The assistant could not start.',
  loadFailedHelp: 'Check your connection and try again.',
  retry: 'Try again',
  ready: 'Ready.',
  model: 'Model: {model}',
  thinking: 'Thinking…',
  // A model that is slow to answer: a sign of life in the conversation.
  waiting: 'The assistant is thinking…',
  waitingLong: 'Still thinking… this is taking longer than usual.',
  // The site's own model reading its prompt (the page's tools) on a slow CPU ({percent}: 0-100).
  reading: 'Reading the page’s tools… {percent} %',
  working: 'Working…',
  toolRunning: 'Using {tool}…',
  toolDone: '{tool}: done.',
  toolFailed: '{tool} did not work: {text}',
  toolDenied: 'Not done: {tool} was not allowed.',
  toolWithdrawn: 'Not done: the page withdrew or changed {tool} while you were deciding.',
  // A card still waiting when the visitor left or reloaded the page (cause "navigated").
  toolLeft: 'Not done: the page was left or reloaded while {tool} waited for your answer.',
  toolNavigated: '{tool} opened another page.',
  stopped: 'Stopped.',
  incomplete: '(incomplete)',
  busy: 'Still working on your last message. Wait for it, or press Stop.',
  newConversation: 'Settings changed: a new conversation starts.',
  newChat: 'New conversation',
  newChatDone: 'New conversation started.',
  notSaved: 'This conversation cannot be kept for the next page (the browser refused to store it); it goes on here.',
  // Back/forward cache: another page of the visit went on with the conversation meanwhile.
  movedOn: 'This conversation went on in another page; it is shown here as it is now.',
  // A duplicated tab (or window.open) found a run that goes on in the first tab.
  otherTab: 'A run of this conversation is going on in another tab: it goes on there, and this tab starts a new conversation.',
  confirmHeading: 'Allow {tool}?',
  confirmAnnounce: 'Confirmation needed: {tool}. Allow or deny.',
  noDetails: 'No details.',
  hiddenShown: 'Invisible or text-direction characters are shown as ⟦U+…⟧ codes.',
  allow: 'Allow',
  deny: 'Deny',
  allowed: 'Allowed.',
  denied: 'Denied.',
  'reason.not-read-only': 'This action can change something on this site, so it asks you first.',
  'reason.consequential': 'The site marked this action as consequential (for example, it places an order), so it always asks.',
  'reason.after-untrusted': 'Text from outside the site (such as reviews) is in this conversation, so every change asks you first.',
  'reason.annotations-unknown': 'The site did not say what this action does, so it asks you first.',
  noModel: 'No AI model is available in this browser.',
  noModelVisitor: 'This assistant uses Chrome’s built-in AI model, which this browser or device does not have. You can use the site as usual, or try desktop Chrome with the on-device model enabled.',
  noModelOwner: 'Site owner: set proxy-url to your own endpoint so every visitor gets a model, or use models="demo" to try the flow without AI.',
  download: 'Download the on-device model',
  downloadHelp: 'Your browser downloads the model once (it is large). Nothing downloads until you click.',
  downloading: 'Downloading the model… {percent}%',
  downloadFailed: 'The download did not finish: {message}',
  configError: 'This assistant is not set up correctly: {message}',
  configStatus: 'Not available: the assistant is not set up correctly.',
  'error.model-unavailable': 'No model can answer on this device right now.',
  'error.model-download-required': 'The on-device model must be downloaded first.',
  'error.max-steps': 'I could not finish that in one go. Try asking for one thing at a time.',
  'error.no-tools': 'This page offers no tools I can use.',
  // Errors a visitor can meet; the technical detail goes to the event, the trace and the console.
  'error.model-error': 'The assistant could not answer just now.',
  'error.busy': 'The assistant is busy right now. Try again in a moment.',
  'error.network': 'The connection to the assistant was lost. Check your connection and try again.',
  'error.timeout': 'The assistant took too long to answer, so it stopped.',
  'error.bad-reply': 'The assistant gave an answer this page could not use.',
  'error.conversation-too-long': 'This conversation has grown too long. Start a new conversation to go on.',
  'error.repeated-call': 'The assistant kept trying the same step, so it stopped.',
  error: 'Something went wrong.',
  // The form tool hand-off ({button}: the text of the form's own submit button; formHandoff
  // when it has none that can be read).
  formHandoffButton: 'Check the form on the page and press {button}.',
  formHandoff: 'Check the form on the page and send it.',
  toolStopped: '{tool}: not finished.',
  // The card.
  moreAbove: 'More above ↑',
  allowBlocked: 'Scroll up and read the whole request before you allow it.',
  confirmWaiting: 'The assistant asks before it goes on: {tool}. It waits until you are ready.',
  // The panel.
  conversation: 'Conversation',
  newChatAsk: 'Start a new conversation? This one will be cleared.',
  newChatYes: 'Start over',
  newChatCancel: 'Keep it',
  examples: 'You can ask:',
  unread: 'new reply',
};

/** `text` with each `{name}` replaced by `values.name` (unknown names stay as they are). */
export const fmt = (text, values = {}) =>
  String(text).replace(/\{(\w+)\}/g, (m, key) => (key in values ? String(values[key]) : m));

/** The string `key` from `overrides`, else the default, with `values` filled in. */
export const lookup = (overrides, key, values) => fmt(overrides[key] ?? DEFAULT_STRINGS[key] ?? key, values);

/** Whether `key` names a string (an override or a default). */
export const known = (overrides, key) => key in overrides || key in DEFAULT_STRINGS;
