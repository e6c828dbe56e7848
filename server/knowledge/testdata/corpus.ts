// A small corpus for the search tests: three dozen short documents on distinct topics, and questions
// whose answer is in exactly one of them. The questions are phrased as a user would ask, not copied from
// the text, so a search has to match words and word forms rather than whole sentences.

export interface CorpusDocument {
  key: string;
  title: string;
  text: string;
  metadata: Record<string, string>;
}

export interface CorpusQuery {
  query: string;
  /** The key of the document that answers it. */
  expected: string;
}

const doc = (key: string, title: string, area: string, body: string): CorpusDocument => ({
  key,
  title,
  text: `# ${title}\n\n${body.trim()}\n`,
  metadata: { area },
});

export const corpus: CorpusDocument[] = [
  doc('photosynthesis', 'Photosynthesis', 'biology', `
Green plants capture sunlight with chlorophyll in their leaves. The light energy splits water molecules and
releases oxygen as a by-product.

## The Calvin cycle

In the second stage the plant fixes carbon dioxide from the air and builds glucose, a sugar it stores as
starch or burns for energy.`),
  doc('volcanoes', 'Volcanoes', 'geology', `
A volcano forms where molten rock, called magma, rises through the crust. When it reaches the surface it is
called lava. Explosive eruptions throw ash and pumice high into the atmosphere, while shield volcanoes such
as those of Hawaii pour out runny basalt lava flows.`),
  doc('aqueducts', 'Roman aqueducts', 'history', `
The Romans carried fresh water into their cities through aqueducts: channels of stone and concrete that
sloped gently downhill for dozens of kilometres. Arched bridges carried the channel across valleys. Rome
itself was fed by eleven aqueducts supplying public baths, fountains and latrines.`),
  doc('sourdough', 'Sourdough bread', 'cooking', `
Sourdough is leavened by a starter: flour and water colonised by wild yeast and lactic acid bacteria. Feed
the starter daily. A long, cool proof of the dough develops the sour flavour and an open crumb; bake it in a
very hot covered pot for a crisp crust.`),
  doc('honeybees', 'Honeybees', 'biology', `
A honeybee colony has one queen, thousands of female worker bees and a few hundred male drones. Workers
forage for nectar and pollen and tell their sisters where flowers are with the waggle dance. Nectar is
turned into honey and stored in wax comb.`),
  doc('black-holes', 'Black holes', 'astronomy', `
A black hole is a region where gravity is so strong that nothing, not even light, can escape once it
crosses the event horizon. Stellar black holes form when a massive star collapses at the end of its life;
supermassive ones sit at the centres of galaxies.`),
  doc('tides', 'Ocean tides', 'earth', `
Tides are the daily rise and fall of sea level caused by the gravitational pull of the Moon and, to a lesser
degree, the Sun. Spring tides, with the largest range, come at new and full moon; neap tides come at the
quarter moons.`),
  doc('jazz', 'The birth of jazz', 'music', `
Jazz grew up in New Orleans around 1900 from blues, ragtime and brass band music. Improvisation and swing
rhythm set it apart. Louis Armstrong's trumpet solos in the 1920s made the improvising soloist the star of
the band.`),
  doc('chess', 'Chess openings', 'games', `
The opening moves of a chess game aim to control the centre, develop the knights and bishops, and castle
the king to safety. Popular openings include the Sicilian Defence, the Queen's Gambit and the Ruy Lopez.`),
  doc('coffee', 'Roasting coffee', 'cooking', `
Green coffee beans are roasted at around 200 degrees Celsius. The first crack, a popping sound, marks a
light roast; darker roasts continue to the second crack and taste more bitter and less acidic. Roasted
beans should rest a few days before brewing.`),
  doc('bicycle', 'Bicycle chain care', 'repair', `
A bicycle chain wears as its pins and rollers stretch. Measure it with a chain checker and replace it
before it wears the cassette and chainrings. Clean the chain with degreaser and apply a drop of lubricant
to each roller, then wipe off the excess.`),
  doc('knitting', 'Knitting basics', 'crafts', `
Knitting turns yarn into fabric with two needles. Cast on a row of stitches, then work the knit stitch and
the purl stitch; alternating rows of each makes stockinette. Bind off at the end so the stitches cannot
unravel.`),
  doc('vaccines', 'How vaccines work', 'medicine', `
A vaccine trains the immune system to recognise a pathogen without causing the disease. It presents an
antigen, such as a weakened virus or a protein, so that B cells make antibodies and memory cells remember
the invader for years.`),
  doc('earthquakes', 'Earthquakes', 'geology', `
Earthquakes happen when stress builds up along a fault between tectonic plates and the rock suddenly slips.
Seismometers record the seismic waves, and the moment magnitude scale measures the energy released.`),
  doc('tea', 'The Japanese tea ceremony', 'culture', `
The Japanese tea ceremony, chanoyu, is the ritual preparation of powdered green tea called matcha. The host
whisks the tea with a bamboo whisk and serves it to guests in a quiet tea room, following gestures refined
over centuries.`),
  doc('penguins', 'Emperor penguins', 'biology', `
Emperor penguins breed in the Antarctic winter. The female lays a single egg and the male balances it on his
feet under a fold of skin for about two months, huddling with other males against the blizzards while the
females feed at sea.`),
  doc('printing', 'The printing press', 'history', `
Around 1450 Johannes Gutenberg in Mainz combined movable metal type, oil-based ink and a screw press. His
printing press made books cheap, and the Gutenberg Bible was among the first books printed in Europe.`),
  doc('compost', 'Composting at home', 'garden', `
Compost is made by layering green kitchen scraps and brown material such as dry leaves and cardboard. Turn
the heap to let air in and keep it as moist as a wrung-out sponge; microbes break it down into crumbly humus
in a few months.`),
  doc('solar', 'Solar panels', 'energy', `
Photovoltaic solar panels convert sunlight directly into electricity. Silicon cells release electrons when
photons strike them, producing direct current that an inverter changes into alternating current for the
home.`),
  doc('lighthouses', 'Lighthouses', 'history', `
A lighthouse warns ships away from rocks and guides them into harbour. Fresnel lenses, invented in 1822,
focus the lamp into a beam visible for twenty nautical miles. Keepers once lived at the lighthouse to wind
the clockwork and trim the wicks.`),
  doc('origami', 'Origami', 'crafts', `
Origami is the Japanese art of folding a single square sheet of paper into a figure without cutting or
gluing it. Valley folds and mountain folds combine into bases from which cranes, frogs and flowers are
shaped.`),
  doc('marathon', 'Marathon training', 'sport', `
Training for a marathon means building weekly mileage gradually, with one long run each week that grows
towards 32 kilometres. Taper for the last two or three weeks so the legs are fresh on race day, and practise
drinking and eating during long runs.`),
  doc('rsa', 'RSA encryption', 'computing', `
RSA is a public-key cryptosystem. Its security rests on the difficulty of factoring the product of two large
prime numbers. Anyone can encrypt a message with the public key, but only the holder of the private key can
decrypt it.`),
  doc('glaciers', 'Glaciers', 'earth', `
A glacier is a slow river of ice formed from snow compacted over many years. Glaciers carve U-shaped valleys
and leave moraines of rock debris; many are now retreating as the climate warms.`),
  doc('coral', 'Coral reefs', 'biology', `
Coral reefs are built by colonies of tiny polyps that secrete calcium carbonate skeletons. Algae living in
their tissue feed them through photosynthesis. When the water is too warm the polyps expel the algae and the
coral bleaches.`),
  doc('silk-road', 'The Silk Road', 'history', `
The Silk Road was a network of trade routes linking China with Central Asia, Persia and the Mediterranean.
Caravans of camels carried silk, spices and paper west, and glass, horses and silver east, along with ideas
and religions.`),
  doc('violin', 'Making a violin', 'music', `
A luthier carves the violin's top from spruce and its back and sides from maple. The f-holes let the sound
out, and a thin varnish protects the wood. Stradivari's instruments from Cremona are still prized for their
tone.`),
  doc('mushrooms', 'Foraging for mushrooms', 'nature', `
Wild mushrooms such as chanterelles and porcini are gathered in autumn woods. Never eat a mushroom you cannot
identify with certainty: the death cap looks harmless and is deadly. Take a spore print to help identify a
species.`),
  doc('knots', 'Sailing knots', 'sport', `
Sailors rely on a few knots. The bowline makes a fixed loop that will not slip, the clove hitch ties a line to
a post, and the reef knot joins two ends of the same rope when reefing a sail.`),
  doc('mars', 'Mars rovers', 'astronomy', `
Robotic rovers have explored the surface of Mars since 1997. Curiosity and Perseverance are nuclear-powered
laboratories on wheels that drill rock samples and search for signs of ancient microbial life in dry lake
beds.`),
  doc('typewriters', 'Typewriters', 'history', `
The typewriter put letters on paper by striking an inked ribbon with metal typebars. The QWERTY keyboard
layout was arranged on early typewriters to keep neighbouring typebars from jamming.`),
  doc('bonsai', 'Bonsai', 'garden', `
Bonsai is the practice of growing miniature trees in shallow pots. Regular pruning of roots and branches and
wiring of the limbs keep the tree small and shape it to resemble an old tree in nature.`),
  doc('sleep', 'Sleep cycles', 'medicine', `
A night's sleep runs through cycles of about ninety minutes. Each cycle passes from light sleep into deep
slow-wave sleep and then REM sleep, when most vivid dreaming happens and the brain consolidates memories.`),
  doc('cacti', 'Desert cacti', 'nature', `
Cacti survive in deserts by storing water in thick, fleshy stems. Their leaves have become spines, which lose
little moisture and deter thirsty animals; a waxy skin seals in the water.`),
  doc('fibonacci', 'The Fibonacci sequence', 'mathematics', `
In the Fibonacci sequence each number is the sum of the two before it: 0, 1, 1, 2, 3, 5, 8, 13. The ratio of
consecutive terms approaches the golden ratio, about 1.618, and the numbers appear in the spirals of
sunflower seeds and pine cones.`),
  doc('balloons', 'Hot air balloons', 'transport', `
A hot air balloon flies because the air inside its envelope, heated by a propane burner, is less dense than
the cooler air outside. The Montgolfier brothers flew the first crewed balloon over Paris in 1783.`),
];

export const queries: CorpusQuery[] = [
  { query: 'how do plants turn sunlight into sugar', expected: 'photosynthesis' },
  { query: 'what comes out of an erupting volcano', expected: 'volcanoes' },
  { query: 'how did Rome get water to its baths and fountains', expected: 'aqueducts' },
  { query: 'feeding a starter for sour bread', expected: 'sourdough' },
  { query: 'why do worker bees dance', expected: 'honeybees' },
  { query: 'can light escape the event horizon', expected: 'black-holes' },
  { query: 'what causes spring tides', expected: 'tides' },
  { query: 'improvisation and swing in New Orleans', expected: 'jazz' },
  { query: 'good first moves in chess', expected: 'chess' },
  { query: 'when is a coffee roast light or dark', expected: 'coffee' },
  { query: 'when should I replace my bike chain', expected: 'bicycle' },
  { query: 'knit and purl stitches', expected: 'knitting' },
  { query: 'how does a vaccine teach the immune system', expected: 'vaccines' },
  { query: 'what makes a fault slip', expected: 'earthquakes' },
  { query: 'matcha ceremony', expected: 'tea' },
  { query: 'which penguin parent keeps the egg warm', expected: 'penguins' },
  { query: 'who invented movable type printing', expected: 'printing' },
  { query: 'how to make compost from kitchen scraps', expected: 'compost' },
  { query: 'turning sunlight into electricity with photovoltaic cells', expected: 'solar' },
  { query: 'what did lighthouse keepers do', expected: 'lighthouses' },
  { query: 'folding paper cranes', expected: 'origami' },
  { query: 'how long should my longest run be before a marathon', expected: 'marathon' },
  { query: 'public key encryption with prime numbers', expected: 'rsa' },
  { query: 'why are glaciers retreating', expected: 'glaciers' },
  { query: 'why does coral bleach', expected: 'coral' },
  { query: 'trade routes between China and the Mediterranean', expected: 'silk-road' },
  { query: 'what wood is a violin made of', expected: 'violin' },
  { query: 'is it safe to eat wild mushrooms', expected: 'mushrooms' },
  { query: 'which knot makes a loop that does not slip', expected: 'knots' },
  { query: 'rovers searching for life on Mars', expected: 'mars' },
  { query: 'why was the QWERTY keyboard layout chosen', expected: 'typewriters' },
  { query: 'keeping a miniature tree small', expected: 'bonsai' },
  { query: 'what happens during REM sleep', expected: 'sleep' },
  { query: 'how do cacti store water in the desert', expected: 'cacti' },
  { query: 'golden ratio and sunflower spirals', expected: 'fibonacci' },
  { query: 'why does a hot air balloon rise', expected: 'balloons' },
];
